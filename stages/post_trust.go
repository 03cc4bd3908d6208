package stages

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/the-loop/the-loop-diagnose/stages/issue"
	"github.com/the-loop/the-loop-diagnose/stages/tracker"
	"github.com/the-loop/the-loop-diagnose/store"
)

// Anyone may open an issue, and a fingerprint is predictable: a marker is
// only ever believed in an issue the tool's own identity (or a configured
// fleet account) wrote, and only where the tool writes it
// (issue.TrailingMarkers). Everything the post stage decides from an issue
// found on GitHub goes through trustedMarkers or ownIssue.

// postMaxForeign bounds the foreign markers kept in state (the newest).
const postMaxForeign = 50

// loginRE is GitHub's login grammar: letters, digits and single inner
// hyphens, at most 39 characters; a GitHub App posts as "name[bot]".
var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:-?[A-Za-z0-9])*(?:\[bot\])?$`)

// ValidLogin reports whether s is a GitHub login (selfDiagnosis.trustedAuthors).
func ValidLogin(s string) bool {
	return len(strings.TrimSuffix(s, "[bot]")) <= 39 && loginRE.MatchString(s)
}

// trusts is the one predicate: login is the token's own (GET /user) or one
// of TrustedAuthors. Logins compare case-insensitively (as GitHub's do),
// exactly otherwise: "app" is not "app[bot]". An unknown login trusts no one.
func (p *poster) trusts(login string) bool {
	if login == "" {
		return false
	}
	if p.login != "" && strings.EqualFold(login, p.login) {
		return true
	}
	return slices.ContainsFunc(p.cfg.TrustedAuthors, func(a string) bool { return strings.EqualFold(a, login) })
}

// trustedMarkers are the fingerprints is counts for: its trailing markers
// when its author is trusted, none otherwise (a stranger's marker is
// remembered for status and logged once).
func (p *poster) trustedMarkers(is *tracker.Issue) []string {
	fps := issue.TrailingMarkers(is.Body)
	if len(fps) == 0 || p.trusts(is.Author) {
		return fps
	}
	for _, fp := range fps {
		p.foreign(is, fp)
	}
	return nil
}

// ownIssue tells whether an issue read by number from the state (recorded
// for fp) is still one to act on: written by a trusted author. Recorded by
// an older version that believed a stranger's marker, it is not.
func (p *poster) ownIssue(is *tracker.Issue, fp string) bool {
	if p.trusts(is.Author) {
		return true
	}
	p.foreign(is, fp)
	return false
}

// foreign logs (once a scan) and remembers a stranger's issue carrying fp's
// marker. The state keeps postMaxForeign entries, one per issue and
// fingerprint, the most recently seen.
func (p *poster) foreign(is *tracker.Issue, fp string) {
	login := is.Author
	if !ValidLogin(login) {
		// GitHub's own never needs this; status prints it to a terminal.
		if r := []rune(login); len(r) > 64 {
			login = string(r[:64])
		}
		login = strconv.QuoteToASCII(login)
	}
	key := strconv.Itoa(is.Number) + " " + fp
	if p.warned == nil {
		p.warned = map[string]bool{}
	}
	if p.warned[key] {
		return
	}
	p.warned[key] = true
	p.cfg.Log.Warn().Str("login", login).Int("issue", is.Number).Str("fingerprint", fp).
		Msg("an issue by an author that is not trusted carries a fingerprint marker: ignored (selfDiagnosis.trustedAuthors lists the fleet's other accounts)")
	// In memory: the scan's state write keeps it (a write per entry would
	// let a flood of planted issues cost a write each).
	p.cfg.Store.Mutate(func(st *store.State) {
		i := slices.IndexFunc(st.ForeignMarkers, func(f store.ForeignMarker) bool {
			return f.Number == is.Number && f.Fingerprint == fp
		})
		if i >= 0 {
			st.ForeignMarkers = slices.Delete(st.ForeignMarkers, i, i+1)
		}
		st.ForeignMarkers = append(st.ForeignMarkers, store.ForeignMarker{
			Number: is.Number, URL: is.URL, Login: login, Fingerprint: fp, At: p.cfg.Now()})
		// Oldest first: the last seen, and of one scan's the newest issues,
		// are what is kept.
		slices.SortStableFunc(st.ForeignMarkers, func(a, b store.ForeignMarker) int {
			if c := a.At.Compare(b.At); c != 0 {
				return c
			}
			return a.Number - b.Number
		})
		if n := len(st.ForeignMarkers); n > postMaxForeign {
			st.ForeignMarkers = slices.Delete(st.ForeignMarkers, 0, n-postMaxForeign)
		}
	})
}
