// Package settings holds what the options of region.New and
// coordinator.New set. The option types are functions of these structs,
// and being internal, they cannot be named outside quota/...: a user
// builds options only with the public With... functions, while the chaos
// harness (inside quota/) can also plant deliberate faults for its
// mutation checks — no test hook appears in the public API.
//
//	opt := region.Option(func(s *settings.Limiter) { s.Faults.RenewRefills = true })
package settings
