// Package redact takes credentials out of connection URLs before they are
// shown: in a page, a log line or an error message.
//
//	fmt.Errorf("connecting to %s: %w", redact.URL(redisURL), err)
//
// It exists because the obvious ways leak: cutting at the first "@" shows
// the rest of a password that contains one, and net/url's own error for a
// URL it cannot parse quotes the whole URL, password included.
package redact
