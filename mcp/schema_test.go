package mcp

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/surface"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// specSurface is the reference's surface file, copied into testdata.
type specSurface struct {
	Tools []struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Tier        string          `json:"tier"`
		Tags        []string        `json:"tags"`
		Annotations map[string]bool `json:"annotations"`
		Meta        map[string]any  `json:"meta"`
		InputSchema json.RawMessage `json:"input_schema_without_descriptions"`
	} `json:"tools"`
	SafetyTiers struct {
		Visible map[string][]string `json:"visible_per_LIBTMUX_SAFETY"`
	} `json:"safety_tiers"`
}

func loadSpecSurface(t *testing.T) *specSurface {
	t.Helper()
	b, err := os.ReadFile("testdata/libtmux-mcp-surface.json")
	if err != nil {
		t.Fatal(err)
	}
	var s specSurface
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func stripDescriptions(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k == "description" {
				continue
			}
			out[k] = stripDescriptions(e)
		}
		return out
	case []any:
		for i := range x {
			x[i] = stripDescriptions(x[i])
		}
	}
	return v
}

func listTools(t *testing.T, s Settings) []*sdk.Tool {
	t.Helper()
	srv, err := New(Options{Settings: s, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	cs, done, err := srv.InProcess(context.Background(), "schema-test")
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// TestToolsMatchSpec holds tools/list against the reference's surface: names
// and order per tier, titles, annotations, _meta and input schemas.
func TestToolsMatchSpec(t *testing.T) {
	spec := loadSpecSurface(t)
	for tierName, want := range spec.SafetyTiers.Visible {
		tier, _ := ParseTier(tierName)
		tools := listTools(t, Settings{Safety: tier, SuppressHistory: true, WaitMax: 30})
		var got []string
		for _, tl := range tools {
			got = append(got, tl.Name)
		}
		want = append([]string(nil), want...)
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("tier %s: tools/list = %v\nwant %v", tierName, got, want)
		}
	}
	tools := listTools(t, Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 30})
	for i, st := range spec.Tools {
		if i >= len(tools) || tools[i].Name != st.Name {
			t.Fatalf("tools/list position %d is not %s (registration order)", i, st.Name)
		}
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	for _, st := range spec.Tools {
		tl := byName[st.Name]
		if tl == nil {
			t.Errorf("%s missing", st.Name)
			continue
		}
		if tl.Title != st.Title {
			t.Errorf("%s title %q, want %q", st.Name, tl.Title, st.Title)
		}
		if tl.Description == "" {
			t.Errorf("%s has no description", st.Name)
		}
		ann := map[string]bool{
			"readOnlyHint":    tl.Annotations.ReadOnlyHint,
			"destructiveHint": *tl.Annotations.DestructiveHint,
			"idempotentHint":  tl.Annotations.IdempotentHint,
			"openWorldHint":   *tl.Annotations.OpenWorldHint,
		}
		if !reflect.DeepEqual(ann, st.Annotations) {
			t.Errorf("%s annotations %v, want %v", st.Name, ann, st.Annotations)
		}
		gotSchema := jsonRoundTrip(t, tl.InputSchema)
		var wantSchema any
		if err := json.Unmarshal(st.InputSchema, &wantSchema); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stripDescriptions(gotSchema), wantSchema) {
			gb, _ := json.Marshal(stripDescriptions(gotSchema))
			t.Errorf("%s input schema differs:\n got %s\nwant %s", st.Name, gb, st.InputSchema)
		}
		// Property order is the parameter order.
		raw, _ := json.Marshal(surface.ToolByName(st.Name).InputSchema(false, false))
		if !sameKeyOrder(t, raw, st.InputSchema) {
			t.Errorf("%s property order differs", st.Name)
		}
		tags := append([]string(nil), st.Tags...)
		sort.Strings(tags)
		fm, _ := tl.Meta["fastmcp"].(map[string]any)
		if fm == nil || !reflect.DeepEqual(jsonRoundTrip(t, fm["tags"]), jsonRoundTrip(t, tags)) {
			t.Errorf("%s _meta.fastmcp.tags = %v, want %v", st.Name, tl.Meta["fastmcp"], tags)
		}
		for k, v := range st.Meta {
			if tl.Meta[k] != v {
				t.Errorf("%s _meta[%s] = %v, want %v", st.Name, k, tl.Meta[k], v)
			}
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s has no output schema", st.Name)
		}
	}
}

func TestRunCommandDefaultFollowsSetting(t *testing.T) {
	for _, sh := range []bool{true, false} {
		tools := listTools(t, Settings{Safety: TierMutating, SuppressHistory: sh, WaitMax: 30})
		for _, tl := range tools {
			if tl.Name != "run_command" {
				continue
			}
			s := jsonRoundTrip(t, tl.InputSchema).(map[string]any)
			p := s["properties"].(map[string]any)["suppress_history"].(map[string]any)
			if p["default"] != sh || p["type"] != "boolean" {
				t.Errorf("suppress_history=%v: schema %v", sh, p)
			}
		}
	}
}

// TestToolsGolden keeps the complete tools/list (with our descriptions and
// output schemas) in testdata/tools.golden.json; run with -update after an
// intended change.
func TestToolsGolden(t *testing.T) {
	tools := listTools(t, Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 30})
	got, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/tools.golden.json", "TestToolsGolden", "tools/list", got)
}

// checkGolden compares got with the golden file at path (rewritten with
// -update); test names the test that -update must run.
func checkGolden(t *testing.T, path, test, what string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./mcp -run %s -update)", err, test)
	}
	if string(want) != string(got)+"\n" {
		t.Fatalf("%s drifted from %s; if intended, run go test ./mcp -run %s -update", what, path, test)
	}
}

func jsonRoundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameKeyOrder compares the order of "properties" keys.
func sameKeyOrder(t *testing.T, a, b []byte) bool {
	ka, kb := propOrder(t, a), propOrder(t, b)
	return reflect.DeepEqual(ka, kb)
}

func propOrder(t *testing.T, b []byte) []string {
	v, err := pyfmt.DecodeOrdered(b)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := v.(*pyfmt.OMap).Get("properties")
	pm, _ := p.(*pyfmt.OMap)
	if pm == nil {
		return nil
	}
	return pm.Keys()
}
