// Command gen writes the JSON Schemas of adopt's documents into schemas/
// from the Go types. Run it with `go generate ./schemas`.
package main

import (
	"fmt"
	"os"

	"github.com/adopt-dev/adopt/internal/atomicfile"
	"github.com/adopt-dev/adopt/schemas"
)

func main() {
	files, err := schemas.Generate("..")
	for name, b := range files {
		if err == nil {
			err = atomicfile.WriteFile(name, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
