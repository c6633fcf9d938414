// Package live is the overload lab's harness on a real machine: a real
// HTTP server on loopback with a CPU-bound handler, and an open-loop load
// generator that sends requests at a set rate whatever the server does —
// as users do — at one, three and ten times what the server can do. It
// runs the same load through four protections: none, afloat's bulkhead
// with a fixed limit, afloat's adaptive limit, and failsafe-go's bulkhead
// (the peer).
//
// The server runs in a child process — this same binary, started with
// ServerEnv set — on one core (GOMAXPROCS=1, and pinned with taskset where
// there is one), so that the load generator does not steal the server's
// CPU as it would inside one process. A binary that runs a comparison
// calls ServeIfChild first thing in main:
//
//	func main() {
//		live.ServeIfChild()
//		rep, err := live.Run(ctx, live.Config{})
//		...
//		live.WriteReport(os.Stdout, rep)
//	}
//
// It lives apart from package overload, the model, so that importing the
// model imports no process, network or peer code.
package live
