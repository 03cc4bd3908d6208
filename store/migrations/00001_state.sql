-- The tool's state, one row per entry (DESIGN.md "The state in a
-- database"). Portable SQL: it runs unchanged on SQLite and PostgreSQL.
-- Times are BIGINT unix milliseconds, UTC. Entries whose shape is this
-- tool's own are JSON text in `body`: only what a query selects or deletes
-- by is a column.

-- +goose Up

-- reported: the dedup key. One compact row per fingerprint ever filed (or
-- filed by the-loop), never pruned; looked up by key, never loaded whole.
-- Shared by a fleet: a defect filed by one deployment is known to all.
CREATE TABLE reported (
    fingerprint TEXT PRIMARY KEY,
    url         TEXT NOT NULL DEFAULT '',
    number      BIGINT NOT NULL DEFAULT 0,
    at_ms       BIGINT NOT NULL DEFAULT 0,
    event       TEXT NOT NULL DEFAULT '',
    title       TEXT NOT NULL DEFAULT '',
    alias_of    TEXT NOT NULL DEFAULT ''
);

-- issues: what a marker lookup learned of a fingerprint's issue (number,
-- state, the occurrence comment). Looked up by key; shared by a fleet.
CREATE TABLE issues (
    fingerprint TEXT PRIMARY KEY,
    body        TEXT NOT NULL
);

-- entries: every bounded per-fingerprint collection (abandoned, attempts,
-- intents, dismissed, deferred, last_failure, first_failed, charged,
-- answers, outages, settled, heals), by kind. scope is '' for what a fleet
-- shares and the deployment's key for what is its own. expires_ms is when
-- retention may delete the row (settled: its until), else NULL. Retention
-- finds such rows in the loaded state, so no index on it costs every
-- entry write a page.
CREATE TABLE entries (
    kind        TEXT NOT NULL,
    scope       TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    body        TEXT NOT NULL,
    expires_ms  BIGINT,
    PRIMARY KEY (kind, scope, fingerprint)
);

-- meta: the state's singletons (cursor, posted, diagnosed, costs,
-- cost_total, deployment, template_memory, incidents, foreign_markers,
-- issue_login, and keys of a JSON state this version does not know).
CREATE TABLE meta (
    scope TEXT NOT NULL,
    name  TEXT NOT NULL,
    body  TEXT NOT NULL,
    PRIMARY KEY (scope, name)
);

-- ledger: the machine's settlements (was diagnoses.jsonl), one row each,
-- written in the transaction of the decision it records; kept for the
-- ledger retention.
CREATE TABLE ledger (
    id           TEXT PRIMARY KEY,
    scope        TEXT NOT NULL,
    at_ms        BIGINT NOT NULL,
    fingerprint  TEXT NOT NULL,
    verdict      TEXT NOT NULL,
    reason       TEXT NOT NULL,
    evidence     TEXT,
    tool_version TEXT NOT NULL
);
CREATE INDEX ledger_at ON ledger (at_ms);

-- outbox: diagnosis.* events, inserted in their decision's transaction and
-- appended to the event log after the commit. log_offset is the log's size
-- at the decision (its line lies past it, so a flush cut short by a crash
-- finds what it already wrote), flushed_ms when the append was done. Kept
-- small by retention, it is scanned, not indexed: an index would cost
-- every event a page more.
CREATE TABLE outbox (
    id         TEXT PRIMARY KEY,
    scope      TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    log_path   TEXT NOT NULL,
    body       TEXT NOT NULL,
    log_offset BIGINT,
    flushed_ms BIGINT
);

-- imports: what was imported into the store (a JSON state, the old
-- diagnoses.jsonl), one row per deployment and kind, so nothing is imported
-- twice. sha256 is the file's ('' when there was none to import).
CREATE TABLE imports (
    scope   TEXT NOT NULL,
    kind    TEXT NOT NULL,
    path    TEXT NOT NULL,
    sha256  TEXT NOT NULL,
    at_ms   BIGINT NOT NULL,
    entries BIGINT NOT NULL,
    PRIMARY KEY (scope, kind)
);

-- backlog_summary: the deferred backlog past backlogDays, counted (its
-- entries and dossiers pruned), by event type.
CREATE TABLE backlog_summary (
    scope       TEXT NOT NULL,
    event       TEXT NOT NULL,
    defects     BIGINT NOT NULL,
    occurrences BIGINT NOT NULL,
    first_ms    BIGINT NOT NULL,
    last_ms     BIGINT NOT NULL,
    PRIMARY KEY (scope, event)
);

-- +goose Down
DROP TABLE backlog_summary;
DROP TABLE imports;
DROP TABLE outbox;
DROP TABLE ledger;
DROP TABLE meta;
DROP TABLE entries;
DROP TABLE issues;
DROP TABLE reported;
