package etcdmember

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// MemberConfig configures one embedded etcd member: the zero-setup
// coordinator's single member, or one member of a cluster in a process of
// its own (afloat quota etcd, which the end-to-end test runs three of).
type MemberConfig struct {
	Name    string
	DataDir string
	// OnReady, if set, is called once by RunMember when the member
	// serves, with the URL its clients connect to: a supervisor's or a
	// person's cue that it is up.
	OnReady func(clientURL string)
	// ClientURL and PeerURL are where the member listens (http://127.0.0.1:port);
	// empty: a free loopback port, kept in the data directory so that a
	// restart listens where it did.
	ClientURL, PeerURL string
	// AdvertisePeerURL is what other members dial (a proxy's address, in
	// the end-to-end test); default PeerURL. AdvertiseClientURL likewise.
	AdvertisePeerURL, AdvertiseClientURL string
	// InitialCluster is name=peerURL,... for a new cluster; default this
	// member alone.
	InitialCluster string
	// TickMs and ElectionMs are etcd's heartbeat interval and election
	// timeout; defaults 50 and 500: a dead etcd leader costs well under a
	// second, and sessions can be 1 s (etcd grants ⌈1.5 × 500 ms⌉).
	TickMs, ElectionMs uint
	// MaxTxnOps is the member's limit on the operations of a transaction
	// (etcd's --max-txn-ops); default DefaultEmbeddedMaxTxnOps.
	MaxTxnOps uint
	// CertFile and KeyFile, if given, are the certificate and key (PEM)
	// the member serves its clients with, over TLS: ClientURL is then
	// https://host:port. ClientCAFile, if given, makes it require a client
	// certificate signed by those CAs (etcd's --client-cert-auth). Needs
	// CertFile.
	CertFile, KeyFile, ClientCAFile string
	// RootPassword, if not empty, turns etcd's authentication on: the
	// member creates the user root with this password (on its first
	// start; a later start finds it) and enables auth, so that every
	// client must log in (docs/quota/operations.md, "etcd with TLS and
	// auth"). The
	// ledger's client then logs in as root or as a user the operator
	// made with etcdctl, with read and write on its prefix. It is never
	// logged.
	RootPassword string
	// AllowRemote lets ClientURL and PeerURL listen beyond loopback.
	// Without it StartMember refuses them: the embedded member has no
	// authentication and no TLS, and whoever reaches its client port can
	// rewrite the ledger and the tenants with etcdctl, bypassing the
	// operators' tokens. (On loopback, every local user of the machine
	// can: docs/quota/operations.md, "Who can reach the embedded
	// etcd".)
	AllowRemote bool
}

// Validate refuses what a member cannot start with whether or not this
// binary has the embedded etcd: no data directory. StartMember checks the
// rest (the URLs) as it picks them.
func (c MemberConfig) Validate() error {
	switch {
	case c.DataDir == "":
		return fmt.Errorf("%w: --data-dir is required", ErrConfig)
	case (c.CertFile == "") != (c.KeyFile == ""):
		return fmt.Errorf("%w: --tls-cert and --tls-key: give both or neither", ErrConfig)
	case c.ClientCAFile != "" && c.CertFile == "":
		return fmt.Errorf("%w: --client-ca: needs --tls-cert and --tls-key", ErrConfig)
	}
	return nil
}

// DefaultEmbeddedMaxTxnOps is an embedded member's limit on the operations
// of a transaction: 1,024 rather than etcd's 128, so that the coordinator
// writes a burst of renewals in fewer, larger transactions (each costs a
// raft round and an fsync, whatever its size).
const DefaultEmbeddedMaxTxnOps = 1024

// ErrConfig: a MemberConfig the member cannot start with (no data
// directory, a URL that is not http://host:port or beyond loopback
// without AllowRemote); the message names the field.
var ErrConfig = errors.New("etcdmember: invalid member config")

// ErrDataDirInUse: another process runs on the data directory.
var ErrDataDirInUse = errors.New("etcdmember: the data directory is in use by another process")

// ErrDataDirDamaged: the embedded etcd's data directory is damaged — its
// WAL missing or cut short, its database cut short or not one — so that
// etcd would hang, crash, or start over the old data. StartMember checks
// before it starts etcd and names what it found.
var ErrDataDirDamaged = errors.New("etcdmember: the data directory is damaged")

// EmbeddedEtcd says whether this binary can run an embedded etcd. The
// embedded server (go.etcd.io/etcd/server/v3/embed) is built only with
// the build tag embedetcd: it more than doubles a cold build of
// cmd/afloat, and a new user's first go run of
// the console must stay quick (docs/quota/operations.md, "Build").
const EmbeddedEtcd = embeddedEtcd

// DefaultDataDir is the embedded etcd's default data directory.
func DefaultDataDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "afloat", "quota-etcd")
}
