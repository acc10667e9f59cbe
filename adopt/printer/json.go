package printer

import (
	"io"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// JSON writes p as indented JSON, one object at a time.
func JSON(w io.Writer, p *plan.Plan) error {
	return p.WriteJSON(w, true)
}
