package printer

import (
	"encoding/json"
	"io"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// JSON writes p as indented JSON.
func JSON(w io.Writer, p *plan.Plan) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(p)
}
