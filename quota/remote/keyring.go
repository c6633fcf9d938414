package remote

import (
	"crypto/subtle"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/afloat/afloat/quota"
)

// regionURIPrefix starts the URI SAN of a region's client certificate.
const regionURIPrefix = "urn:afloat:region:"

// RegionURI is the URI a region's client certificate carries among its
// subject alternative names to name the region: urn:afloat:region:NAME.
// A URI SAN, not the common name: the common name is often the host's,
// and Go's own verification has not read it since Go 1.15.
func RegionURI(region string) string { return regionURIPrefix + region }

// RegionOfCert is the region a certificate names (RegionURI), or "" when
// it names none, or more than one. It does not verify the certificate:
// the TLS handshake has, against the client CA.
func RegionOfCert(cert *x509.Certificate) string {
	found := ""
	for _, u := range cert.URIs {
		name, ok := strings.CutPrefix(u.String(), regionURIPrefix)
		if !ok || name == "" {
			continue
		}
		if found != "" && found != name {
			return "" // two regions: neither
		}
		found = name
	}
	return found
}

// Keyring holds the tokens a coordinator accepts, by principal — the
// regions' (HandlerConfig.Keyring), or the operators' —: several for one
// while its token is rotated (the old and the new), none for a region
// that authenticates with its certificate only. Set replaces them all at
// once, while the handler serves. It is safe for concurrent use.
type Keyring struct {
	tokens atomic.Pointer[map[string][]string]
}

// NewKeyring returns a keyring holding tokens (Set).
func NewKeyring(tokens map[string][]string) (*Keyring, error) {
	k := &Keyring{}
	if err := k.Set(tokens); err != nil {
		return nil, err
	}
	return k, nil
}

// Set replaces the tokens: principal → its valid tokens. It refuses,
// whole, a token under 16 bytes and a token given to two principals (it
// would name both); the message names the principal, never the token. A
// request under way is checked against the old tokens or the new, never
// a mix.
func (k *Keyring) Set(tokens map[string][]string) error {
	owner := map[string]string{}
	cp := make(map[string][]string, len(tokens))
	for _, r := range slices.Sorted(maps.Keys(tokens)) {
		for i, tok := range tokens[r] {
			if len(tok) < 16 {
				return fmt.Errorf("%w: remote: token %d of %q has %d bytes: want at least 16", quota.ErrConfig, i, r, len(tok))
			}
			if o, dup := owner[tok]; dup && o != r {
				return fmt.Errorf("%w: remote: %q has a token of %q: each needs its own", quota.ErrConfig, r, o)
			}
			owner[tok] = r
		}
		cp[r] = slices.Clone(tokens[r])
	}
	k.tokens.Store(&cp)
	return nil
}

// known says whether region is one of the keyring's.
func (k *Keyring) known(region string) bool {
	_, ok := (*k.tokens.Load())[region]
	return region != "" && ok
}

// Match returns the principal whose token tok is, or "". Every token is
// compared, in constant time, so that the time taken shows neither the
// token nor whose it matched.
func (k *Keyring) Match(tok string) string {
	found := ""
	for region, toks := range *k.tokens.Load() {
		for _, want := range toks {
			if subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1 {
				found = region
			}
		}
	}
	return found
}
