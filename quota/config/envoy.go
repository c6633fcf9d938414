package config

import (
	"fmt"
	"strconv"
)

// EnvoyConfig is the config file's envoy section: how the region agent
// answers Envoy's rate-limit service (envoy.service.ratelimit.v3, over
// gRPC, on --grpc-listen). Each descriptor Envoy sends is matched against
// Descriptors, in file order; the first match names the tenant whose
// quota it spends and the endpoint that prices it (the tenant's costs).
//
//	envoy:
//	  domain: edge
//	  headers: x-ratelimit
//	  descriptors:
//	    - entries: [{key: tenant, value: acme}, {key: path, value: /search}]
//	      tenant: acme
//	      endpoint: /search
//	    - entries: [{key: tenant, value: acme}, {key: remote_address}]
//	      tenant: acme
//
// A descriptor no entry matches is answered OK and spends nothing, as
// Envoy's own ratelimit service answers a descriptor it has no limit
// for: the agent limits what the config names, and nothing else.
type EnvoyConfig struct {
	// Domain is the rate-limit domain Envoy's filter sends; a request for
	// another domain is refused (InvalidArgument).
	Domain string `yaml:"domain"`
	// Headers chooses the response headers: "x-ratelimit" (default:
	// X-RateLimit-Limit, -Remaining, -Reset, and Retry-After when over
	// the limit), "ratelimit" (the names Envoy's ratelimit service uses:
	// RateLimit-Limit, -Remaining, -Reset, and Retry-After), or "none".
	Headers string `yaml:"headers"`
	// Token, if set (or read from TokenFile), is required of every call
	// as the gRPC metadata "authorization: Bearer TOKEN" (Envoy's
	// grpc_service initial_metadata): at least 16 bytes. Without it the
	// service must listen on a loopback address, as the decision API does.
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token_file"`
	// Descriptors maps descriptors to tenants; 1 to 10000 entries.
	Descriptors []EnvoyDescriptor `yaml:"descriptors"`
}

// EnvoyDescriptor maps the descriptors whose entries equal Entries (the
// same keys in the same order, as Envoy's actions produce them) to a
// tenant and an endpoint.
type EnvoyDescriptor struct {
	// Entries are 1 to 16 key/value pairs; an empty value matches any.
	Entries []EnvoyEntry `yaml:"entries"`
	// Tenant is whose quota a match spends: one of the config's tenants.
	Tenant string `yaml:"tenant"`
	// Endpoint prices a match: each hit costs the tenant's cost of it.
	Endpoint string `yaml:"endpoint"`
}

// EnvoyEntry is a descriptor entry.
type EnvoyEntry struct {
	Key   string `yaml:"key"`
	Value string `yaml:"value"`
}

// Limits of the envoy and proxy sections, which the agent's rate-limit
// service also holds a request to: entries per descriptor, bytes per
// domain, key, value, endpoint or path prefix, and rules (descriptors or
// routes) per section.
const (
	MaxEnvoyEntries = 16
	MaxEnvoyString  = 1024
	MaxRules        = 10_000
)

// Configured says whether the file has an envoy section.
func (e *EnvoyConfig) Configured() bool {
	return e.Domain != "" || e.Headers != "" || e.Token != "" || e.TokenFile != "" || len(e.Descriptors) > 0
}

// validate checks the envoy section; tenants are the config's names.
func (e *EnvoyConfig) validate(tenants map[string]int) error {
	if !e.Configured() {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: envoy."+format, append([]any{ErrConfigFile}, args...)...)
	}
	switch {
	case e.Domain == "" || len(e.Domain) > 256:
		return bad("domain %q: want 1 to 256 bytes", e.Domain)
	case e.Token != "" && e.TokenFile != "":
		return bad("token and token_file: give one")
	case e.Token != "" && len(e.Token) < 16:
		return bad("token: %d bytes: want at least 16", len(e.Token))
	case len(e.Descriptors) == 0 || len(e.Descriptors) > MaxRules:
		return bad("descriptors: %d: want 1 to %d", len(e.Descriptors), MaxRules)
	}
	if e.Headers == "" {
		e.Headers = "x-ratelimit"
	}
	if e.Headers != "x-ratelimit" && e.Headers != "ratelimit" && e.Headers != "none" {
		return bad("headers %q: want x-ratelimit, ratelimit or none", e.Headers)
	}
	seen := map[string]int{}
	for i, d := range e.Descriptors {
		field := fmt.Sprintf("descriptors[%d]", i)
		if len(d.Entries) == 0 || len(d.Entries) > MaxEnvoyEntries {
			return bad("%s.entries: %d: want 1 to %d", field, len(d.Entries), MaxEnvoyEntries)
		}
		for j, en := range d.Entries {
			switch {
			case en.Key == "" || len(en.Key) > MaxEnvoyString:
				return bad("%s.entries[%d].key %q: want 1 to %d bytes", field, j, en.Key, MaxEnvoyString)
			case len(en.Value) > MaxEnvoyString:
				return bad("%s.entries[%d].value: %d bytes: want at most %d (empty: any value)", field, j, len(en.Value), MaxEnvoyString)
			}
		}
		if _, ok := tenants[d.Tenant]; !ok {
			return bad("%s.tenant %q: not in tenants", field, d.Tenant)
		}
		if len(d.Endpoint) > MaxEnvoyString {
			return bad("%s.endpoint: %d bytes: want at most %d", field, len(d.Endpoint), MaxEnvoyString)
		}
		k := EntriesKey(d.Entries)
		if j, dup := seen[k]; dup {
			return bad("%s.entries: the same as descriptors[%d].entries: the second never matches", field, j)
		}
		seen[k] = i
	}
	return nil
}

// EntriesKey is entries as one string, unambiguously (lengths first);
// an empty value is written as such, which no exact value equals. Two
// descriptors match the same requests exactly when their keys are equal:
// validation refuses such a pair, and the agent finds a request's exact
// rule by it.
func EntriesKey[E interface{ GetKeyValue() (string, string) }](es []E) string {
	return string(AppendEntriesKey(nil, es))
}

// AppendEntriesKey appends EntriesKey(es) to dst: a caller that looks the
// key up in a map (m[string(key)]) allocates nothing.
func AppendEntriesKey[E interface{ GetKeyValue() (string, string) }](dst []byte, es []E) []byte {
	for _, e := range es {
		k, v := e.GetKeyValue()
		dst = strconv.AppendInt(dst, int64(len(k)), 10)
		dst = append(dst, ':')
		dst = append(dst, k...)
		dst = strconv.AppendInt(dst, int64(len(v)), 10)
		dst = append(dst, ':')
		dst = append(dst, v...)
	}
	return dst
}

// GetKeyValue returns the entry's key and value.
func (e EnvoyEntry) GetKeyValue() (string, string) { return e.Key, e.Value }
