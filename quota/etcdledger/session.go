package etcdledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// The keep-alive cadence of a session. Every 250 ms, so that a live
// leader's lease never looks a second stale (DeposeAfter); 100 ms between
// tries while etcd does not answer, so that the first keep-alive after an
// etcd election lands soon after it.
const (
	keepAliveEvery = 250 * time.Millisecond
	keepAliveRetry = 100 * time.Millisecond
	// deposeEvery is how often a campaigning replica reads the leader's
	// lease: two small reads, ten times a second, so that a dead leader
	// is found stale within 0.1 s of its lease being so.
	deposeEvery = 100 * time.Millisecond
)

// ErrSessionLost: the election session ended; the message says why (etcd
// answered that the lease is gone, or no keep-alive was confirmed within
// its TTL).
var ErrSessionLost = errors.New("etcdledger: session lost")

// session is the etcd lease an election key lives on, and its keep-alive.
// etcd's concurrency.Session gives up on a lease the moment the client has
// had no keep-alive answer for its TTL — which an etcd election of a
// second or two does with a short TTL, though etcd itself extends every
// lease when its new leader takes over — and a coordinator that gave up
// then waited behind its own election key until the lease expired. This
// one keeps trying until etcd says the lease is gone or the TTL has
// surely passed.
type session struct {
	*concurrency.Session // for concurrency.Election; its own keep-alive is redundant

	lost   chan struct{} // closed when the session ends
	cancel context.CancelFunc
	cli    *clientv3.Client

	mu  sync.Mutex
	err error // why it ended
	// The newest keep-alive etcd confirmed: sent when it was sent, and
	// ttl the TTL etcd answered, from that moment. etcd refreshed the
	// lease no earlier than sent, so it lives past sent + ttl unless
	// revoked.
	sent time.Time
	ttl  time.Duration
}

// newSession grants a lease of ttl seconds and keeps it alive until ctx
// ends or the lease is lost.
func newSession(ctx context.Context, cli *clientv3.Client, ttl int) (*session, error) {
	asked := time.Now()
	g, err := cli.Grant(ctx, int64(ttl))
	if err != nil {
		return nil, fmt.Errorf("etcdledger: granting a session lease: %w", err)
	}
	kctx, cancel := context.WithCancel(context.Background())
	cs, err := concurrency.NewSession(cli, concurrency.WithLease(g.ID), concurrency.WithContext(kctx))
	if err != nil {
		cancel()
		rctx, rcancel := context.WithTimeout(context.Background(), timeoutClose)
		cli.Revoke(rctx, g.ID) //nolint:errcheck // it expires anyway
		rcancel()
		return nil, fmt.Errorf("etcdledger: starting a session: %w", err)
	}
	s := &session{Session: cs, lost: make(chan struct{}), cancel: cancel, cli: cli, sent: asked, ttl: time.Duration(g.TTL) * time.Second}
	go s.keep(kctx, cli, g.ID, asked.Add(time.Duration(g.TTL)*time.Second))
	return s, nil
}

// keep renews the lease every keepAliveEvery until etcd answers that it
// is gone, or no renewal has been confirmed by until — the moment the
// lease may have expired, counted from the sending of the last confirmed
// renewal: a renewal that fails (etcd without a leader, the member it was
// sent to dead) is tried again every keepAliveRetry meanwhile.
func (s *session) keep(ctx context.Context, cli *clientv3.Client, id clientv3.LeaseID, until time.Time) {
	defer close(s.lost)
	for {
		wait := keepAliveEvery
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, min(2*keepAliveEvery, max(time.Until(until), time.Millisecond)))
		resp, err := cli.KeepAliveOnce(actx, id)
		cancel()
		switch {
		case ctx.Err() != nil:
			s.end(fmt.Errorf("%w: closed", ErrSessionLost))
			return
		case err == nil:
			until = sent.Add(time.Duration(resp.TTL) * time.Second)
			s.confirmed(sent, resp.TTL)
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			s.end(fmt.Errorf("%w: etcd answered that lease %x is gone (expired, or revoked as stale)", ErrSessionLost, id))
			return
		default:
			wait = keepAliveRetry
		}
		left := time.Until(until)
		if left <= 0 {
			s.end(fmt.Errorf("%w: no keep-alive of lease %x confirmed within its TTL: it may have expired", ErrSessionLost, id))
			return
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// confirmed records a keep-alive sent at sent that etcd answered with
// ttl seconds.
func (s *session) confirmed(sent time.Time, ttl int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sent.After(s.sent) {
		s.sent, s.ttl = sent, time.Duration(ttl)*time.Second
	}
}

// confirm sends a keep-alive now and records etcd's answer: the session's
// proof of life as of this moment. An error wrapping ErrSessionLost if
// etcd answered that the lease is gone.
func (s *session) confirm(ctx context.Context) error {
	sent := time.Now()
	resp, err := s.cli.KeepAliveOnce(ctx, s.Lease())
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("%w: etcd answered that lease %x is gone (expired, or revoked as stale)", ErrSessionLost, s.Lease())
	case err != nil:
		return fmt.Errorf("etcdledger: confirming the session: %w", err)
	}
	s.confirmed(sent, resp.TTL)
	return nil
}

// alive is the newest keep-alive's sending and the TTL etcd gave from it.
func (s *session) alive() (time.Time, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent, s.ttl
}

func (s *session) end(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// why is why the session ended; nil while it lives.
func (s *session) why() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// close stops the keep-alive and revokes the lease (deleting the keys on
// it), within timeoutClose.
func (s *session) close(cli *clientv3.Client) error {
	s.cancel()
	<-s.lost
	ctx, cancel := context.WithTimeout(context.Background(), timeoutClose)
	defer cancel()
	_, err := cli.Revoke(ctx, s.Lease())
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		err = nil
	}
	return err
}

// deposeStale runs while this replica campaigns, until ctx ends: every
// deposeEvery it reads the leader's election key and, from etcd's leader,
// the remaining TTL of the lease it lives on; a lease that has gone more
// than after seconds without a keep-alive is revoked, which deletes the
// key and lets the next candidate lead. etcd counts TTLs in whole seconds,
// rounded down: a remaining r ≤ granted − after − 1 means more than after
// seconds without a renewal. own is this replica's lease, never revoked.
func deposeStale(ctx context.Context, cli *clientv3.Client, prefix string, own clientv3.LeaseID, after int64) {
	t := time.NewTicker(deposeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := cli.Get(rctx, prefix, clientv3.WithFirstCreate()...)
		if err == nil && len(resp.Kvs) > 0 {
			if id := clientv3.LeaseID(resp.Kvs[0].Lease); id != clientv3.NoLease && id != own {
				ttl, err := cli.TimeToLive(rctx, id)
				if err == nil && ttl.TTL >= 0 && ttl.TTL <= ttl.GrantedTTL-after-1 {
					cli.Revoke(rctx, id) //nolint:errcheck // tried again next tick if the leader stays stale
				}
			}
		}
		cancel()
	}
}
