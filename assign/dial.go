package assign

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/afloat/afloat/internal/redact"
)

// ClientOptions returns rueidis options for a Redis URL
// (redis://[user:password@]host:port[/db], rediss:// for TLS), with the
// settings this package relies on:
//
//   - retries off: a pick is not idempotent, and a client that resends it
//     after a dropped connection counts assignments nobody received (the
//     issue measured 60 phantom picks over 30 dropped connections with a
//     client's default retries). The package reports ErrAmbiguous instead.
//   - client-side caching off: nothing here reads cacheable data, and the
//     in-process demo server does not support it.
//
// Auto-pipelining stays on: concurrent picks from many goroutines share a
// connection and its round trips, which is where rueidis's throughput
// without explicit batching comes from (docs/assign.md).
func ClientOptions(redisURL string) (rueidis.ClientOption, error) {
	u, err := url.Parse(redisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" || u.Opaque != "" {
		return rueidis.ClientOption{}, fmt.Errorf("%w: redis URL %q: want redis://host:port[/db] or rediss://host:port[/db]", ErrInvalid, clip(redact.URL(redisURL)))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return rueidis.ClientOption{}, fmt.Errorf("%w: redis URL %q: no query or fragment allowed", ErrInvalid, clip(redact.URL(redisURL)))
	}
	if port, err := strconv.Atoi(u.Port()); err != nil || port < 1 || port > 65535 {
		what := "no port"
		if u.Port() != "" {
			what = "port " + clip(u.Port())
		}
		return rueidis.ClientOption{}, fmt.Errorf("%w: redis URL %q: %s: want 1 to 65535, such as :6379", ErrInvalid, clip(redact.URL(redisURL)), what)
	}
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		// The client's message may quote the URL: never its password.
		msg := strings.ReplaceAll(err.Error(), redisURL, redact.URL(redisURL))
		if pw := password(redisURL); pw != "" {
			msg = strings.ReplaceAll(msg, pw, redact.Hidden)
		}
		return rueidis.ClientOption{}, fmt.Errorf("%w: redis URL %q: %s", ErrInvalid, clip(redact.URL(redisURL)), msg)
	}
	opt.DisableRetry = true
	opt.DisableCache = true
	opt.Dialer.Timeout = 5 * time.Second
	return opt, nil
}

// Dial connects to the Redis at redisURL with ClientOptions. The caller
// closes the client.
func Dial(redisURL string) (rueidis.Client, error) {
	opt, err := ClientOptions(redisURL)
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
