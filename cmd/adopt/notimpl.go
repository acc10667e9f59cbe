package main

import (
	"fmt"
)

func notImplemented(name string) error {
	return &exitError{code: ExitNotImplemented, err: fmt.Errorf("adopt %s is not implemented yet (exit code %d); use 'adopt plan' for now", name, ExitNotImplemented)}
}
