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

// Client is a connection to a Redis server (or cluster) for pools and
// leases. Dial makes one. It keeps the Redis client library (rueidis,
// with client retries and client-side caching off) out of this package's
// API, so that a caller imports no Redis client's types. It is safe for concurrent use: open every pool
// of a process on one Client, and Close it when done.
type Client struct {
	rc rueidis.Client
}

// Close closes the client's connections. Pools and leases opened on it
// fail afterwards.
func (c *Client) Close() { c.rc.Close() }

// CheckURL reports whether Dial would accept redisURL
// (redis://[user:password@]host:port[/db], rediss:// for TLS), so that a
// command line can be refused before anything connects. Its errors wrap
// ErrInvalid and never show the URL's password.
func CheckURL(redisURL string) error {
	_, err := clientOptions(redisURL)
	return err
}

// clientOptions returns the client's options for a Redis URL, with the
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
func clientOptions(redisURL string) (rueidis.ClientOption, error) {
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

// Dial connects to the Redis at redisURL (see CheckURL) with client
// retries off: a pick is not idempotent, so a lost connection gives
// ErrAmbiguous instead of a resent pick. The caller closes the client.
func Dial(redisURL string) (*Client, error) {
	opt, err := clientOptions(redisURL)
	if err != nil {
		return nil, err
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("assign: connecting to %s: %w", redact.URL(redisURL), err)
	}
	return &Client{rc: c}, nil
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
