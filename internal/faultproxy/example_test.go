package faultproxy_test

import (
	"bufio"
	"fmt"
	"net"

	"github.com/afloat/afloat/internal/faultproxy"
)

// A link through the proxy works until it is cut, and again once healed.
func Example() {
	echo, _ := net.Listen("tcp", "127.0.0.1:0")
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Fprint(c, line)
				c.Close()
			}()
		}
	}()
	p, err := faultproxy.New(echo.Addr().String())
	if err != nil {
		panic(err)
	}
	defer p.Close()
	ask := func() string {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			return "refused"
		}
		defer c.Close()
		fmt.Fprint(c, "hello\n")
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return "cut"
		}
		return line[:len(line)-1]
	}
	fmt.Println(ask())
	p.Cut()
	fmt.Println(ask())
	p.Heal()
	fmt.Println(ask())
	// Output:
	// hello
	// cut
	// hello
}
