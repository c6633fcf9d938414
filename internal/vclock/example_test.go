package vclock_test

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/internal/vclock"
)

// Timers fire inside Advance, in the order they fall due, each with the
// clock at its instant; a stopped one never fires.
func Example() {
	c := vclock.New(time.Unix(0, 0).UTC())
	c.AfterFunc(2*time.Second, func() { fmt.Println("second timer at", c.Now().Format("15:04:05")) })
	c.AfterFunc(time.Second, func() { fmt.Println("first timer at", c.Now().Format("15:04:05")) })
	stopped := c.AfterFunc(1500*time.Millisecond, func() { fmt.Println("never") })
	fmt.Println("stopped while pending:", stopped.Stop())
	c.Advance(5 * time.Second)
	fmt.Println("now", c.Now().Format("15:04:05"))
	// Output:
	// stopped while pending: true
	// first timer at 00:00:01
	// second timer at 00:00:02
	// now 00:00:05
}
