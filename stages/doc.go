// Package stages holds the pipeline's stages and the one place they are
// put together, Build (build.go), which run, watch, dry run and replay all
// call. DESIGN.md is the long form of this map. What the stages call but
// is no stage has a package of its own under stages/: agent (the
// harnesses), tracker (GitHub), budget (the caps, their window and the
// fleet's reservations), group (a defect group's arithmetic), incident
// (give-up linking, identity fields), source (the service's source and git
// checkout), evidence (checking an agent's quotes) and issue (an issue's
// text: markers, titles, fitted bodies, the occurrence tally).
//
// # The stages in order, and what flows between them
//
// Each stage is a pipeline.Stage[In, Out] over a typed channel; the item
// types are in pipeline/items.go.
//
//	stage          file               in → out
//	read           logread            (event log) → Record
//	decode         logread            Record → Record (fields decoded)
//	filter         filter.go          Record → Candidate (failures, and successes for healing)
//	fingerprint    fingerprint.go     Candidate → Occurrence (+ incident/: a bare give-up's incident)
//	dedup          dedup.go           Occurrence → Group, one per defect (+ group/, triage.go)
//	dossier        dossier.go         Group → Dossier (+ source/)
//	preflight      build.go           Dossier → Dossier (GitHub checked before the first agent run)
//	reuse answers  answers.go         Dossier → Dossier (a kept answer instead of a run)
//	agent          agent.go           Dossier → Finding
//	keep answers   answers.go         Finding → Finding (each new answer kept at once)
//	gate           gate.go            Finding → Finding (caps, confidence; + evidence/)
//	compose        compose.go         Finding → Report (+ issue/)
//	post | print   post*.go | print.go Report → Outcome (over tracker/, + issue/)
//	persist        persist.go         Outcome → state (+ outcome.go, outage.go)
//
// Build's Deps say which of the optional steps a scan has (preflight,
// ledger, fleet, post or print) and where replay ends; nothing per scan is
// set on a long-lived value.
//
// # Who writes the state
//
// Persist writes each outcome's decision; the scan's last transaction,
// FinishScan (persist.go, called by Scan.Finish), moves the cursor and keeps
// the incident index, the outages and the retention. Some writes happen
// earlier, each for crash safety or a budget:
//
//   - dedup (in memory, written by the scan's end): the template memory and
//     state moved to a merged family's fingerprint (group/regroup.go);
//   - build.go (budget.ChargeRun): a run's charge before it starts;
//     answers.go: each answer as it comes (the daily diagnosis budget,
//     paid once);
//   - budget/fleet.go: claims and fleet-wide counts, in the shared database;
//   - post*.go: the issue cache, a create's intent before it
//     is made, reports, dismissals, the token's login, foreign markers;
//   - store's (*State).Forget and Retry: what cmd's forget and retry
//     commands change of a defect.
//
// # Where each policy lives
//
//   - the candidate rule: logread/policy.go, applied by filter.go;
//   - identity: fingerprint/, plus IdentityFields and incident
//     correlation (incident/);
//   - new, known, settled, the caps per scan and day: dedup.go Decide and
//     triage.go (healed, environment); the agent's settlement and the issue
//     cap: gate.go, on evidence.Verify; fixed upstream: source/upstream.go;
//   - the budget's caps, window, charge and refund: budget/, settled by persist;
//   - what leaves the machine: dossier.go (allow-list), compose.go and
//     issue/ (what is published), persist.go scrubOutcome (the disk);
//   - outages (GitHub or the agent down: the defects wait): outage.go, the
//     preflight (build.go), the agent's health (agent.go);
//   - exactly-once filing: post.go, with persist.
package stages
