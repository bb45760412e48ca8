// Command strata is the operators' tool of the Strata storage engine:
// check, dump, lsm, scan, get, gc, stress and crashtest. Run it without
// arguments for the list; the commands live in package tool, which other
// programs can embed.
package main

import (
	"os"

	"github.com/strata-db/strata/tool"
)

func main() {
	os.Exit(tool.New().Run(os.Args[1:]))
}
