package redisurl

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/afloat/afloat/internal/redact"
)

// Check reports whether Dial would accept redisURL
// (redis://[user:password@]host:port[/db], rediss:// for TLS). Its errors
// wrap invalid, the caller's sentinel for bad input, and never show the
// URL's password.
func Check(redisURL string, invalid error) error {
	_, err := Options(redisURL, invalid)
	return err
}

// Options returns the client's options for a Redis URL, with the settings
// package assign relies on:
//
//   - retries off: a pick is not idempotent, and a client that resends it
//     after a dropped connection counts assignments nobody received (the
//     issue measured 60 phantom picks over 30 dropped connections with a
//     client's default retries). assign reports ErrAmbiguous instead.
//     (rueidis never resends a write such as EVALSHA; the setting makes
//     it explicit for everything else.)
//   - client-side caching off: nothing here reads cacheable data, and the
//     in-process demo server does not support it.
//
// Auto-pipelining stays on: concurrent picks from many goroutines share a
// connection and its round trips, which is where rueidis's throughput
// without explicit batching comes from (docs/assign.md).
func Options(redisURL string, invalid error) (rueidis.ClientOption, error) {
	u, err := url.Parse(redisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" || u.Opaque != "" {
		return rueidis.ClientOption{}, fmt.Errorf("%w: redis URL %q: want redis://host:port[/db] or rediss://host:port[/db]", invalid, clip(redact.URL(redisURL)))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return rueidis.ClientOption{}, fmt.Errorf("%w: redis URL %q: no query or fragment allowed", invalid, clip(redact.URL(redisURL)))
	}
	if port, err := strconv.Atoi(u.Port()); err != nil || port < 1 || port > 65535 {
		what := "no port"
		if u.Port() != "" {
			what = "port " + clip(u.Port())
		}
		return rueidis.ClientOption{}, fmt.Errorf("%w: redis URL %q: %s: want 1 to 65535, such as :6379", invalid, clip(redact.URL(redisURL)), what)
	}
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		// The client's message may quote the URL: never its password.
		msg := strings.ReplaceAll(err.Error(), redisURL, redact.URL(redisURL))
		if pw := password(redisURL); pw != "" {
			msg = strings.ReplaceAll(msg, pw, redact.Hidden)
		}
		return rueidis.ClientOption{}, fmt.Errorf("%w: redis URL %q: %s", invalid, clip(redact.URL(redisURL)), msg)
	}
	opt.DisableRetry = true
	opt.DisableCache = true
	opt.Dialer.Timeout = 5 * time.Second
	return opt, nil
}

// Dial connects to the Redis at redisURL (see Options). The caller closes
// the client.
func Dial(redisURL string, invalid error) (rueidis.Client, error) {
	opt, err := Options(redisURL, invalid)
	if err != nil {
		return nil, err
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("assign: connecting to %s: %w", redact.URL(redisURL), err)
	}
	return c, nil
}

// password returns the password of a URL that parses, "" otherwise.
func password(redisURL string) string {
	u, err := url.Parse(redisURL)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// clip shortens a value quoted in an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
