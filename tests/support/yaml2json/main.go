// yaml2json reads YAML documents the way kubectl, Helm and Argo CD do
// (sigs.k8s.io/yaml, over go-yaml v2) and prints what they become, so the
// tests can hold crd-safety's reader to the real one.
//
// stdin: a JSON array of YAML documents (strings).
// stdout: a JSON array, one entry per document: {"json": <the value>} or
// {"error": "<why the reader refuses it>"}.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

type result struct {
	JSON  json.RawMessage `json:"json,omitempty"`
	Error string          `json:"error,omitempty"`
}

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var docs []string
	if err := json.Unmarshal(in, &docs); err != nil {
		fmt.Fprintln(os.Stderr, "stdin is not a JSON array of strings:", err)
		os.Exit(1)
	}
	out := make([]result, 0, len(docs))
	for _, doc := range docs {
		converted, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			out = append(out, result{Error: err.Error()})
			continue
		}
		out = append(out, result{JSON: converted})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
