package scale

import "github.com/afloat/afloat/internal/freeport"

// freeAddr is a free loopback address below the kernel's ephemeral port
// range (internal/freeport): the processes bind it later, and again after
// a restart, and with tens of thousands of renewals a second many ports
// of that range become the local ends of outgoing connections meanwhile.
func freeAddr() (string, error) { return freeport.Addr() }
