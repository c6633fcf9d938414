// Package hostcheck decides which Host headers an HTTP listener answers,
// the defence against DNS rebinding shared by every listener of afloat
// (the console, the quota's region agent and coordinator).
//
// A web page the user visits can send requests to a server on the user's
// machine or network; with DNS rebinding (evil.example first resolving to
// the attacker, then to 127.0.0.1) its script can also read the answers,
// as same-origin. Its requests then carry Host: evil.example. A server
// that answers only its own names — loopback names, and the names it is
// given — refuses them:
//
//	names, err := hostcheck.New("quota.internal", "10.0.0.5")
//	if !names.Allows(r.Host) { /* 403 */ }
package hostcheck
