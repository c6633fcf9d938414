package remote

import (
	"errors"
	"time"

	"github.com/afloat/afloat/quota"
)

// The API, version 1: POST and GET routes, JSON both ways, one bearer
// token per region (Authorization: Bearer TOKEN).
//
//	POST /v1/region/attach {"agent":"host:pid"}               → {"epoch":E,"incarnation":N} | 409 {"error":…,"code":"region_held","holder":…} + Retry-After
//	POST /v1/region/detach {"incarnation":N}                  → {"epoch":E} | 409 {"error":…,"code":"superseded"}
//	POST /v1/renew   {"incarnation":N,"requests":[quota.Request...],"patience_ms":P}  → {"epoch":E,"results":[{"grant":…}|{"error":…,"code":…}],"nudges":[…]} | 503 {"error":…,"code":"busy","retry_after_ms":W,"patience_ms":P'}
//	POST /v1/return  {"incarnation":N,"returns":[quota.Return...],"patience_ms":P}    → {"epoch":E,"results":[{}|{"error":…,"code":…}]} | 503 busy
//	GET  /v1/region/tenants                                   → {"epoch":E,"region":R,"tenants":[{"name":…,"version":V,"costs":{…}}...]} + ETag; 304 to a matching If-None-Match
//
// One agent spends for a region at a time. An agent attaches first: the
// coordinator issues it an incarnation N — random, known only to it —
// and refuses (409, with the holder and a Retry-After: when the last of
// the holder's leases stops counting) while a lease granted to another
// incarnation of the region still counts. Every renewal and return body
// carries N, and the coordinator answers each call of an incarnation that
// no longer holds the region with code superseded: the agent must attach
// again, and waits while another holds the region. A clean shutdown gives
// the leases back, then detaches: the region is free for the next agent
// at once. A body with calls and incarnation 0 is refused (400): over the
// network there is no caller that need not attach. An empty renewal (a
// poll for nudges, or a probe for the leader) may carry 0, and gets no
// nudges; with an incarnation that no longer holds the region it gets a
// 409 superseded, so that an agent with no tenant to renew learns it too.
// The region is always the token's, never the body's.
//
// A renewal or return body may say how long its caller waits for the
// answer (patience_ms, 1 to 60,000; absent: the coordinator's own
// bound): the coordinator gives its work a deadline of the body's
// receipt plus the lesser of three quarters of it (the rest is the
// answer's way) and its own bound. A request whose write would land
// after that deadline, behind the writes queued ahead of it, is refused
// at once with code busy, nothing of it done; a body none of whose
// requests can be answered in time is refused whole with 503 busy, the
// wait it asks for, and the patience a body needs now (patience_ms, P');
// what it took in and cannot write by the deadline after all, it drops.
// A whole body is refused busy, too, when the coordinator is taking in
// all it can. Either way the region backs off as a whole, not tenant by
// tenant.
//
// GET /v1/region/tenants lists the tenants whose regions include the
// token's region, as the leader has them now: region agents poll it to
// follow the tenants operators create and delete.
//
// Every request and return in a body must name the region the token
// belongs to. A follower answers 503 with {"error":…,"leader":URL}; a
// region's client then turns to the leader, if it is one of the
// coordinators it was configured with (a token is never sent anywhere
// else). A call claiming an epoch above the coordinator's own is refused
// (code unverified_epoch) and changes nothing: epochs are the
// coordinator's to know, from etcd, and a region's word is no proof; a
// region's client that meets it turns to its next configured coordinator,
// as the one it asked is behind one the region has heard from. Retries
// are idempotent: a renewal carries the region's request number (Seq),
// and the coordinator answers a number it has seen with the grant it gave
// it; a return of a lease that no longer counts changes nothing.

// RenewBody is the body of POST /v1/renew.
type RenewBody struct {
	// Incarnation is the agent's, from its attach; the coordinator copies
	// it into each request (a request's own incarnation, if given, must
	// be the same). Required when Requests is not empty.
	Incarnation uint64          `json:"incarnation"`
	Requests    []quota.Request `json:"requests"`
	// PatienceMS is how long the caller waits for the answer, in
	// milliseconds from when it sent the body: 1 to MaxPatience; absent
	// (0), the coordinator's own bound. The coordinator answers by then,
	// or drops what it could not do: a region that has given up installs
	// nothing it would grant.
	PatienceMS int64 `json:"patience_ms,omitempty"`
}

// ReturnBody is the body of POST /v1/return.
type ReturnBody struct {
	// Incarnation is as in RenewBody.
	Incarnation uint64         `json:"incarnation"`
	Returns     []quota.Return `json:"returns"`
	// PatienceMS is as in RenewBody.
	PatienceMS int64 `json:"patience_ms,omitempty"`
}

// AttachBody is the body of POST /v1/region/attach.
type AttachBody struct {
	// Agent says which process attaches, for the refusals another agent
	// of the region gets and the coordinator's log: 1 to 256 printable
	// characters, host and process id, say. It is no credential.
	Agent string `json:"agent"`
}

// AttachAnswer is the answer to an attach.
type AttachAnswer struct {
	Epoch uint64 `json:"epoch"`
	// Incarnation is the agent's, for every renewal and return from now
	// on; below 2⁵³, so that any JSON parser reads it exactly.
	Incarnation uint64 `json:"incarnation"`
}

// DetachBody is the body of POST /v1/region/detach.
type DetachBody struct {
	Incarnation uint64 `json:"incarnation"`
}

// MaxAgent is the longest agent description an attach takes, in bytes.
const MaxAgent = 256

// Result is the answer to one request or return.
type Result struct {
	Grant *quota.Grant `json:"grant,omitempty"`
	Error string       `json:"error,omitempty"`
	Code  string       `json:"code,omitempty"`
	// PatienceMS, in a request refused busy (code busy) for the writes
	// queued ahead of it, is the patience a call needs for it not to be
	// refused so again (a Refusal's patience_ms, for one request); the
	// region's next calls wait that long. Omitted otherwise.
	PatienceMS int64 `json:"patience_ms,omitempty"`
}

// Answer is the body of a 200 answer.
type Answer struct {
	Epoch   uint64        `json:"epoch"`
	Results []Result      `json:"results"`
	Nudges  []quota.Nudge `json:"nudges,omitempty"`
}

// RegionTenants is the answer of GET /v1/region/tenants.
type RegionTenants struct {
	Epoch   uint64         `json:"epoch"`
	Region  string         `json:"region"`
	Tenants []RegionTenant `json:"tenants"`
	// Version names the list (the ETag, unquoted): a poll that sends it
	// back is answered 304 while the list has not changed.
	Version string `json:"version,omitempty"`
}

// RegionTenant is a tenant in RegionTenants: what an agent needs to serve
// it (limits and leases come with grants).
type RegionTenant struct {
	Name string `json:"name"`
	// Version is the tenant's version on the coordinator, for logs.
	Version uint64 `json:"version"`
	// Costs weighs requests by endpoint (quota.Tenant.Costs).
	Costs map[string]int64 `json:"costs,omitempty"`
}

// Refusal is the body of any other answer.
type Refusal struct {
	Error string `json:"error"`
	// Leader is where the leader is, in a follower's 503.
	Leader string `json:"leader,omitempty"`
	// Code is the reason of a 409: region_held (an attach while another
	// agent holds the region) or superseded (a detach by an incarnation
	// that no longer holds it).
	Code string `json:"code,omitempty"`
	// Holder describes the agent that holds the region, in a 409
	// region_held.
	Holder string `json:"holder,omitempty"`
	// RetryAfterMS is, in a 503 busy, how long to wait before asking
	// again, in milliseconds: finer than the Retry-After header's whole
	// seconds, which says the same rounded up.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
	// PatienceMS is, in a 503 busy refused for the writes queued ahead of
	// the call, the least patience (as a body's patience_ms) with which
	// the coordinator expects to answer a call now: a caller that asked
	// with less may ask again with more.
	PatienceMS int64 `json:"patience_ms,omitempty"`
}

// Codes of a Result's error, for the errors a region can branch on.
const (
	CodeUnknownTenant = "unknown_tenant"
	CodeUnknownRegion = "unknown_region"
	CodeStaleEpoch    = "stale_epoch"
	CodeUnavailable   = "unavailable" // the ledger did not take the write in time: ask again
	CodeInvalid       = "invalid"
	// CodeSuperseded: the body's incarnation no longer holds the region
	// (quota.ErrSuperseded): attach again.
	CodeSuperseded = "superseded"
	// CodeUnverifiedEpoch: the call claims an epoch above the
	// coordinator's (quota.ErrUnverifiedEpoch); nothing changed.
	CodeUnverifiedEpoch = "unverified_epoch"
	// CodeRegionHeld: an attach while another agent holds the region
	// (quota.ErrRegionHeld), in a 409.
	CodeRegionHeld = "region_held"
	// CodeBusy: the coordinator refused the whole call (503) to shed load
	// (quota.ErrBusy); its Retry-After says when to ask again. In a
	// result: that request alone, for the writes queued ahead of it.
	CodeBusy = "busy"
)

// Limits of the API.
const (
	// MaxBody is the largest body the coordinator reads, in bytes.
	MaxBody = 1 << 20
	// MaxBatch is the most requests or returns in one body.
	MaxBatch = 2048
	// MaxPatience is the most patience a body may claim (PatienceMS).
	MaxPatience = time.Minute
)

// Errors of the client.
var (
	// ErrUnauthorized: the coordinator refused the token (401), or the
	// region for this token (403).
	ErrUnauthorized = errors.New("remote: the coordinator refused the credentials")
	// ErrNoLeader: no configured coordinator answered as the leader.
	ErrNoLeader = errors.New("remote: no coordinator answered as the leader")
)

func codeOf(err error) string {
	switch {
	case errors.Is(err, quota.ErrUnknownTenant):
		return CodeUnknownTenant
	case errors.Is(err, quota.ErrUnknownRegion):
		return CodeUnknownRegion
	case errors.Is(err, quota.ErrStaleEpoch):
		return CodeStaleEpoch
	case errors.Is(err, quota.ErrSuperseded):
		return CodeSuperseded
	case errors.Is(err, quota.ErrUnverifiedEpoch):
		return CodeUnverifiedEpoch
	case errors.Is(err, quota.ErrRegionHeld):
		return CodeRegionHeld
	case errors.Is(err, quota.ErrBusy):
		return CodeBusy
	case errors.Is(err, quota.ErrConfig):
		return CodeInvalid
	}
	return CodeUnavailable
}

func errOf(r Result) error {
	if r.Error == "" {
		return nil
	}
	var base error
	switch r.Code {
	case CodeUnknownTenant:
		base = quota.ErrUnknownTenant
	case CodeUnknownRegion:
		base = quota.ErrUnknownRegion
	case CodeStaleEpoch:
		base = quota.ErrStaleEpoch
	case CodeSuperseded:
		base = quota.ErrSuperseded
	case CodeUnverifiedEpoch:
		base = quota.ErrUnverifiedEpoch
	case CodeInvalid:
		base = quota.ErrConfig
	case CodeBusy:
		// A request refused alone: its write would have landed after
		// the call's deadline. The patience it needs rides along.
		base = &quota.BusyError{Need: time.Duration(min(max(r.PatienceMS, 0), MaxPatience.Milliseconds())) * time.Millisecond}
	default:
		return &remoteError{msg: r.Error}
	}
	return &remoteError{msg: r.Error, base: base}
}

type remoteError struct {
	msg  string
	base error
}

func (e *remoteError) Error() string { return "remote: coordinator: " + e.msg }
func (e *remoteError) Unwrap() error { return e.base }
