package printer

import (
	"io"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// YAML writes p as YAML, the plan file format.
func YAML(w io.Writer, p *plan.Plan) error {
	return plan.Encode(w, p)
}
