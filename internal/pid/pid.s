// This file lets pid.go declare functions without a body: their bodies
// are the runtime's, reached by go:linkname.
