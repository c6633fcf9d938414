// Package vclock is a virtual clock for models that drive real components
// in simulated time: time moves only when Advance is called, and timers
// fire inside Advance, in order, on the caller's goroutine.
//
//	c := vclock.New(time.Unix(0, 0))
//	c.AfterFunc(time.Second, func() { fmt.Println("tick") })
//	c.Advance(2 * time.Second) // prints tick
package vclock
