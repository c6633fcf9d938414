// Package redisurl reads the Redis URL a command line or the console is
// given and dials a rueidis client with the settings package assign relies
// on (client retries and client-side caching off), so that the front ends
// refuse a bad URL before anything connects and never show its password.
// A library user brings a client of their own (assign.FromGoRedis,
// assign.FromRueidis); this is for afloat's own commands.
//
//	if err := redisurl.Check(u, assign.ErrInvalid); err != nil {
//		return fmt.Errorf("--redis: %w", err) // no password in err
//	}
//	rc, err := redisurl.Dial(u, assign.ErrInvalid)
//	c, err := assign.FromRueidis(rc)
//	defer rc.Close()
package redisurl
