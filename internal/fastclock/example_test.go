package fastclock_test

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/internal/fastclock"
)

func Example() {
	start := fastclock.Now()
	time.Sleep(2 * time.Millisecond)
	took := time.Duration(fastclock.Now() - start)
	fmt.Println(took >= 2*time.Millisecond-fastclock.MaxError)
	// Output: true
}
