package remote

import (
	"errors"

	"github.com/afloat/afloat/quota"
)

// The API, version 1: two POST routes and a GET, JSON both ways, one
// bearer token per region (Authorization: Bearer TOKEN).
//
//	POST /v1/renew   {"requests":[quota.Request...]}  → {"epoch":E,"results":[{"grant":…}|{"error":…,"code":…}],"nudges":[…]}
//	POST /v1/return  {"returns":[quota.Return...]}    → {"epoch":E,"results":[{}|{"error":…,"code":…}]}
//	GET  /v1/region/tenants                          → {"epoch":E,"region":R,"tenants":[{"name":…,"version":V,"costs":{…}}...]}
//
// GET /v1/region/tenants lists the tenants whose regions include the
// token's region, as the leader has them now: region agents poll it to
// follow the tenants operators create and delete.
//
// Every request and return in a body must name the region the token
// belongs to. A follower answers 503 with {"error":…,"leader":URL}; a
// region's client then turns to the leader, if it is one of the
// coordinators it was configured with (a token is never sent anywhere
// else). Retries are idempotent: a renewal carries the region's request
// number (Seq), and the coordinator answers a number it has seen with the
// grant it gave it; a return of a lease that no longer counts changes
// nothing.

// RenewBody is the body of POST /v1/renew.
type RenewBody struct {
	Requests []quota.Request `json:"requests"`
}

// ReturnBody is the body of POST /v1/return.
type ReturnBody struct {
	Returns []quota.Return `json:"returns"`
}

// Result is the answer to one request or return.
type Result struct {
	Grant *quota.Grant `json:"grant,omitempty"`
	Error string       `json:"error,omitempty"`
	Code  string       `json:"code,omitempty"`
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
}

// Codes of a Result's error, for the errors a region can branch on.
const (
	CodeUnknownTenant = "unknown_tenant"
	CodeUnknownRegion = "unknown_region"
	CodeStaleEpoch    = "stale_epoch"
	CodeUnavailable   = "unavailable" // the ledger did not take the write in time: ask again
	CodeInvalid       = "invalid"
)

// Limits of the API.
const (
	// MaxBody is the largest body the coordinator reads, in bytes.
	MaxBody = 1 << 20
	// MaxBatch is the most requests or returns in one body.
	MaxBatch = 2048
)

// Errors of the client.
var (
	// ErrUnauthorized: the coordinator refused the region's token (401)
	// or the region (403).
	ErrUnauthorized = errors.New("remote: the coordinator refused this region's credentials")
	// ErrNoLeader: no configured coordinator answered as the leader.
	ErrNoLeader = errors.New("remote: no coordinator is leading")
)

func codeOf(err error) string {
	switch {
	case errors.Is(err, quota.ErrUnknownTenant):
		return CodeUnknownTenant
	case errors.Is(err, quota.ErrUnknownRegion):
		return CodeUnknownRegion
	case errors.Is(err, quota.ErrStaleEpoch):
		return CodeStaleEpoch
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
	case CodeInvalid:
		base = quota.ErrConfig
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
