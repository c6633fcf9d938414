// Package config reads the file every process of a quota cluster reads:
// the regions and their tokens, the tenants, the operators, etcd's
// settings, the agents' renewal, and the fronts (Envoy's rate-limit
// service, the reverse proxy). YAML, or JSON (read three times as fast,
// into the tree YAML's parser builds, so that it means what YAML's parser
// makes of it); every error names its
// field and wraps ErrConfigFile; numbers mean what they say (a 0 is no
// floor, never the default). The tenants in the file seed the
// coordinators' ledger once, on a new cluster; from then on the tenants
// API changes them (docs/quota/operations.md, "Tenants").
//
//	cfg, err := config.LoadConfig("quota.yaml") // token_file entries read, 0600 or 0400
//	tenants := cfg.TenantsOf("eu")             // as quota.Tenant, with the defaults
//
// The coordinator replicas (quota/coordinator/replica) and the region
// agents (quota/agent) take a *Config. docs/quota/config.md lists every
// key with its default and range (TestReferenceListsEveryField holds it to
// the types here), and docs/quota-cluster.yaml is a complete file.
package config
