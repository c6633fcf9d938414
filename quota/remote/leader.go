package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/quota"
)

// leaders sends requests to whichever of a fixed list of coordinators
// leads: the one leader-following client of the package, under a
// region's Client and an Operator alike. It is safe for concurrent use.
type leaders struct {
	endpoints []string               // base URLs, without a trailing slash
	token     atomic.Pointer[string] // the bearer token, sent to the endpoints only; "" for none
	region    string                 // the region whose token it is ("" for an operator), named in a HeldError
	http      *http.Client
	limit     int64        // bytes of an answer read at most
	leader    atomic.Int64 // index into endpoints of the one believed to lead
}

// checkEndpoints returns the endpoints in one form (ParseEndpoints), or
// quota.ErrConfig naming the first that is not an http(s) base URL. With
// secure (a TLS config given), host:port reads as https://host:port and
// an http:// endpoint is refused.
func checkEndpoints(endpoints []string, secure bool) ([]string, error) {
	parse := ParseEndpoints
	if secure {
		parse = ParseEndpointsTLS
	}
	out, err := parse("endpoints", endpoints)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", quota.ErrConfig, err)
	}
	return out, nil
}

// hasCert says whether cfg presents a client certificate.
func hasCert(cfg *tls.Config) bool { return cfg != nil && len(cfg.Certificates) > 0 }

// httpClient is the default HTTP client of a Client or an Operator.
func httpClient(timeout time.Duration, cfg *tls.Config) *http.Client {
	if cfg == nil {
		return &http.Client{Timeout: timeout}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg.Clone()
	return &http.Client{Timeout: timeout, Transport: t}
}

// do sends a request to the leader and returns which endpoint answered;
// decode reads a 200 answer. It starts at the endpoint believed to lead.
// A 4xx answer is the coordinator's word on this request — any of them
// would refuse the same credentials or body — so no other endpoint is
// asked. A 5xx (a follower's 503 among them) or no answer moves on: to
// the leader a follower names when it is one of the endpoints (the token
// goes nowhere else), else to the next endpoint; each gets a try, and
// one more for the leader named last. A ctx that ends stops it at once,
// with ctx's error, and the next call starts at the next endpoint.
func (l *leaders) do(ctx context.Context, method, path string, data []byte, decode func([]byte) error) (int, error) {
	n := len(l.endpoints)
	var last error
	for range n + 1 {
		i := int(l.leader.Load()) % n
		raw, leader, final, err := l.request(ctx, method, l.endpoints[i]+path, data)
		if err == nil {
			return i, decode(raw)
		}
		if final {
			return i, err
		}
		if ctx.Err() != nil {
			// The caller gave up (its patience ran out): another endpoint
			// would not be asked in time, so this call ends here. But the
			// next goes to the next endpoint: a leader that does not answer
			// may be dead or paused while another has taken over, and a
			// region that kept asking it would wait out the pause (a 3 s
			// SIGSTOP cost every region its leases). A follower answers
			// naming the leader, so a leader that was only slow is back
			// in one round trip.
			l.leader.CompareAndSwap(int64(i), int64((i+1)%n))
			return i, fmt.Errorf("remote: %s%s: no answer in time: %w", l.endpoints[i], path, ctx.Err())
		}
		last = err
		next := (i + 1) % n
		if leader != "" {
			j := slices.Index(l.endpoints, strings.TrimSuffix(leader, "/"))
			if j < 0 {
				last = fmt.Errorf("remote: %s is not the leader; the leader is %s, which is not among the endpoints given", l.endpoints[i], leader)
			} else {
				next = j
			}
		}
		l.leader.CompareAndSwap(int64(i), int64(next))
	}
	return 0, fmt.Errorf("%w: %v", ErrNoLeader, last)
}

// ifNoneMatch is the context key of an If-None-Match a GET carries (the
// tenants' list: Client.Tenants).
type ifNoneMatch struct{}

// errNotModified: a GET answered 304 to its If-None-Match.
var errNotModified = errors.New("remote: not modified")

// request makes one HTTP request. It returns a 200 answer's body; or the
// error, the leader a follower named, and whether the answer is final (a
// 4xx: see do).
func (l *leaders) request(ctx context.Context, method, u string, data []byte) (raw []byte, leader string, final bool, err error) {
	var body io.Reader
	if data != nil {
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, "", true, fmt.Errorf("remote: %w", err)
	}
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok := *l.token.Load(); tok != "" { // else the client certificate names the region
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if tag, ok := ctx.Value(ifNoneMatch{}).(string); ok {
		req.Header.Set("If-None-Match", tag)
	}
	resp, err := l.http.Do(req)
	if err != nil {
		var unknown x509.UnknownAuthorityError
		var hostname x509.HostnameError
		switch {
		case errors.As(err, &unknown):
			// Final: every coordinator is signed by the same CA, or
			// should be; the fix is the client's.
			return nil, "", true, fmt.Errorf("remote: %w (is --ca the CA that signed the coordinators' certificates?)", err)
		case errors.As(err, &hostname):
			return nil, "", true, fmt.Errorf("remote: %w (the URL's host must be one of the certificate's names)", err)
		}
		return nil, "", false, fmt.Errorf("remote: %w", err)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, l.limit))
	if err != nil {
		return nil, "", false, fmt.Errorf("remote: %s: reading the answer: %w", u, err)
	}
	if resp.StatusCode == http.StatusOK {
		return raw, "", false, nil
	}
	if resp.StatusCode == http.StatusNotModified {
		return nil, "", true, errNotModified
	}
	var ref Refusal
	json.Unmarshal(raw, &ref) //nolint:errcheck // the status says enough
	if ref.Error == "" {
		ref.Error = strings.TrimSpace(string(raw))
	}
	final = resp.StatusCode >= 400 && resp.StatusCode < 500
	switch {
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
		return nil, "", final, fmt.Errorf("%w: %s: %s", ErrUnauthorized, resp.Status, ref.Error)
	case resp.StatusCode == http.StatusConflict && ref.Code == CodeRegionHeld:
		wait, _ := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
		return nil, "", final, &quota.HeldError{Region: l.region, Holder: ref.Holder, Wait: time.Duration(min(max(wait, 1), 3600)) * time.Second}
	case resp.StatusCode == http.StatusServiceUnavailable && ref.Code == CodeBusy:
		// The leader sheds load: final, as asking a follower would only be
		// sent back to it. The body's wait is finer than Retry-After's
		// whole seconds.
		wait := time.Duration(min(max(ref.RetryAfterMS, 0), 60_000)) * time.Millisecond
		if wait == 0 {
			secs, _ := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
			wait = time.Duration(min(max(secs, 0), 60)) * time.Second
		}
		need := time.Duration(min(max(ref.PatienceMS, 0), MaxPatience.Milliseconds())) * time.Millisecond
		return nil, "", true, &quota.BusyError{Wait: wait, Why: ref.Error, Need: need}
	case resp.StatusCode == http.StatusConflict && ref.Code == CodeSuperseded:
		return nil, "", final, &remoteError{msg: ref.Error, base: quota.ErrSuperseded}
	}
	return nil, ref.Leader, final, fmt.Errorf("remote: %s: %s: %s", u, resp.Status, ref.Error)
}
