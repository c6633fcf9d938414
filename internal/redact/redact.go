package redact

import (
	"net/url"
	"strings"
)

// Hidden replaces the credentials of a URL.
const Hidden = "xxxxx"

// URL returns s with everything before the host hidden: the user name and
// the password of scheme://user:password@host/…, whatever characters they
// hold. A URL that net/url cannot parse is handled too, by cutting at the
// last "@" before the path, so that a malformed URL (the usual cause of an
// error message that quotes it) cannot show its password either. Strings
// without credentials come back unchanged. It is safe for concurrent use.
func URL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Opaque == "" {
		if u.User == nil {
			return s
		}
		u.User = url.User(Hidden)
		return u.String()
	}
	// Unparsable. The authority runs from "//" to the next "/", "?" or
	// "#" — unless a password holds one of those, so take the last "@"
	// anywhere after the scheme: whatever precedes it may be secret.
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	at := strings.LastIndex(s[start:], "@")
	if at < 0 {
		return s
	}
	return s[:start] + Hidden + s[start+at:]
}
