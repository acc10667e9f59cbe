// Command gen writes the JSON Schemas of adopt's documents into schemas/
// from the Go types. Run it with `go generate ./schemas`.
package main

import (
	"fmt"
	"os"

	"github.com/adopt-dev/adopt/schemas"
)

func main() {
	p, c, err := schemas.Generate("..")
	if err == nil {
		err = os.WriteFile(schemas.PlanFile, p, 0o644)
	}
	if err == nil {
		err = os.WriteFile(schemas.ConfigFile, c, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
