package cli_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/afloat/afloat/internal/cli"
)

// runGreet is a run function: it adds its flags, parses, and returns an
// exit status.
func runGreet(c *cli.Command, args []string) int {
	name := c.String("name", "world", "who to greet, `NAME`")
	loud := c.Bool("loud", false, "shout")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if *name == "" {
		return c.Refuse(fmt.Errorf("--name: want a name"))
	}
	greeting := "hello, " + *name
	if *loud {
		greeting = strings.ToUpper(greeting)
	}
	fmt.Fprintln(c.Stdout, greeting)
	return cli.ExitOK
}

func Example() {
	tool := &cli.Program{
		Name:  "tool",
		About: "tool greets.",
		Commands: []cli.Entry{
			{Path: "say hello", Synopsis: "tool say hello [--name NAME] [--loud]", Summary: "greet someone", Run: runGreet},
		},
	}
	for _, args := range [][]string{
		{"say", "hello", "--name", "Ada", "--loud"},
		{"say", "hello", "--name", ""},
		{"say"},
	} {
		status := tool.Run(args, os.Stdin, os.Stdout, os.Stdout)
		fmt.Println("exit", status)
	}
	// Output:
	// HELLO, ADA
	// exit 0
	// tool say hello: --name: want a name
	// Run 'tool say hello --help' for usage.
	// exit 2
	// tool say: missing subcommand
	//
	// Usage:
	//   tool say hello [--name NAME] [--loud]
	//
	// Subcommands:
	//   hello   greet someone
	//
	// Run 'tool say <subcommand> --help' for its flags.
	// exit 2
}
