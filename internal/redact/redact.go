package redact

import (
	"net/url"
	"strings"
)

// Hidden replaces the credentials of a URL.
const Hidden = "xxxxx"

// URL returns s with its credentials hidden: the user name and the
// password of scheme://user:password@host/…, whatever characters they
// hold, and the whole query and fragment, which can carry a password too
// (redis://host:6379/?password=…, a client option some Redis clients
// read) under any key, spelling or escape. A URL that net/url cannot parse
// is handled too: everything before the last "@" after the scheme and
// everything from the first "?" or "#" is hidden, and if a "?" or "#"
// comes before that "@", everything after the scheme — so that a
// malformed URL (the usual cause of an error message that quotes it)
// cannot show a password either. Strings without credentials come back
// unchanged. It is safe for concurrent use.
func URL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Opaque == "" {
		if u.User == nil && u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && u.RawFragment == "" &&
			!strings.ContainsAny(s, "?#") {
			return s
		}
		if u.User != nil {
			u.User = url.User(Hidden)
		}
		if u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "?") {
			u.RawQuery, u.ForceQuery = Hidden, false
		}
		if u.Fragment != "" || u.RawFragment != "" || strings.Contains(s, "#") {
			u.Fragment, u.RawFragment = Hidden, ""
		}
		return u.String()
	}
	// Unparsable. The authority runs from "//" to the next "/", "?" or
	// "#" — unless a password holds one of those, so take the last "@"
	// anywhere after the scheme: whatever precedes it may be secret; and
	// whatever follows the first "?" or "#" may be a query's secret.
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	rest := s[start:]
	at := strings.LastIndex(rest, "@")
	q := strings.IndexAny(rest, "?#")
	if q >= 0 && at > q {
		return s[:start] + Hidden // a query before the "@": no part is surely clear
	}
	out := s[:start]
	mid := rest
	if q >= 0 {
		mid = rest[:q]
	}
	if at >= 0 {
		out += Hidden
		mid = mid[at:]
	}
	out += mid
	if q >= 0 {
		out += rest[q:q+1] + Hidden
	}
	return out
}
