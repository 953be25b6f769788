// Package surface is the reference's MCP surface as data: the tools,
// their input and output schemas, resources and prompts of libtmux-mcp
// 0.1.0a20 (embedded from its JSON description), the descriptions
// fleetmux writes for them, and the validation of call arguments against
// those schemas with the reference's error texts.
package surface

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

// surfaceJSON is the part of the reference's surface file that fixes tool
// names, titles, tiers, annotations, parameters, input schemas and result
// models. Descriptions are ours (descriptions.go).
//
//go:embed surface.json
var surfaceJSON []byte

// fleetSurfaceJSON adds what exists only in fleet mode: the list_hosts
// tool and its result model.
//
//go:embed surface_fleet.json
var fleetSurfaceJSON []byte

type Param struct {
	Name        string          `json:"name"`
	Type        json.RawMessage `json:"type"`
	Nullable    bool            `json:"nullable"`
	Required    bool            `json:"required"`
	Default     any             `json:"default"`
	Enum        []string        `json:"enum"`
	Constraints map[string]any  `json:"constraints"`
}

// TypeNames returns the declared types: "string", "array<X>", ...
func (p *Param) TypeNames() []string {
	var one string
	if json.Unmarshal(p.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(p.Type, &many)
	return many
}

type Tool struct {
	Name              string          `json:"name"`
	Title             string          `json:"title"`
	Tier              string          `json:"tier"`
	Tags              []string        `json:"tags"`
	Annotations       map[string]bool `json:"annotations"`
	Preset            string          `json:"annotation_preset"`
	Meta              map[string]any  `json:"meta"`
	SelfBounded       bool            `json:"self_bounded"`
	Batchable         bool            `json:"batchable"`
	AcceptsSocketName bool            `json:"accepts_socket_name"`
	Params            []Param         `json:"params"`
	Returns           string          `json:"returns"`
	Wrapped           bool            `json:"output_wrapped_in_result_key"`
	ResponseLimited   bool            `json:"response_limited"`
	BatchMaxTier      string          `json:"batch_max_tier"`
	InputSchemaRaw    json.RawMessage `json:"input_schema_without_descriptions"`
	NoHostParam       bool            `json:"no_host_param"` // fleet-only tools that are not per host
}

type Field struct {
	Field    string `json:"field"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	Required bool   `json:"required"`
	Default  any    `json:"default"`
}

type Resource struct {
	URITemplate string            `json:"uri_template"`
	Name        string            `json:"name"`
	Title       string            `json:"title"`
	MIMEType    string            `json:"mime_type"`
	Errors      map[string]string `json:"errors"`
}

type PromptArg struct {
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Default  any    `json:"default"`
	JSONType string `json:"json_type"`
}

type Prompt struct {
	Name      string      `json:"name"`
	Arguments []PromptArg `json:"arguments"`
}

type Surface struct {
	Tools      []*Tool            `json:"tools"`
	FleetTools []*Tool            `json:"-"` // from surface_fleet.json
	Models     map[string][]Field `json:"models"`
	Resources  []Resource         `json:"resources"`
	Prompts    []Prompt           `json:"prompts"`
}

var Spec = mustLoadSurface()

func mustLoadSurface() *Surface {
	var s Surface
	if err := json.Unmarshal(surfaceJSON, &s); err != nil {
		panic(fmt.Sprintf("mcp: embedded surface.json: %v", err))
	}
	var f Surface
	if err := json.Unmarshal(fleetSurfaceJSON, &f); err != nil {
		panic(fmt.Sprintf("mcp: embedded surface_fleet.json: %v", err))
	}
	s.FleetTools = f.Tools
	for name, m := range f.Models {
		s.Models[name] = m
	}
	return &s
}

func ToolByName(name string) *Tool {
	for _, t := range Spec.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// InputSchema returns the reference's input schema with our descriptions
// added to the tool's properties (and, when fleet is set, the host
// parameter appended).
func (t *Tool) InputSchema(fleet bool, hostGlob bool) *pyfmt.OMap {
	v, err := pyfmt.DecodeOrdered(t.InputSchemaRaw)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %s: %v", t.Name, err))
	}
	root := v.(*pyfmt.OMap)
	props, _ := root.Get("properties")
	pm, _ := props.(*pyfmt.OMap)
	if pm == nil {
		pm = pyfmt.NewOMap()
		root.Set("properties", pm)
	}
	for _, k := range pm.Keys() {
		pv, _ := pm.Get(k)
		if po, ok := pv.(*pyfmt.OMap); ok {
			if d := ParamDescription(t.Name, k); d != "" {
				pm.Set(k, withDescription(po, d))
			}
		}
	}
	if fleet && !t.NoHostParam {
		d := "Host to run on: \"local\" (this machine) or an ssh_config alias enabled with --hosts."
		action := FanoutActions[t.Name]
		switch {
		case hostGlob:
			d += " \"*\", a glob or a list of hosts (JSON list or comma-separated) runs on every named host and merges the results."
		case action:
			d += " \"*\", a glob or a list of hosts (JSON list or comma-separated) runs on every named host and reports each host's outcome, hosts with the same outcome grouped; targets must then be named by session_name, not by tmux id."
		}
		h := pyfmt.NewOMap()
		h.Set("default", "local")
		h.Set("description", d)
		if hostGlob || action {
			h.Set("anyOf", []any{
				map[string]any{"type": "string"},
				map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1},
			})
		} else {
			h.Set("type", "string")
		}
		pm.Set("host", h)
		if action {
			for _, p := range []struct{ name, typ, desc string }{
				{"serial", "integer", "With several hosts: how many hosts run at once, wave after wave (default: all, up to fleetmux's --fanout-concurrency)."},
				{"max_failures", "integer", "With several hosts: stop starting hosts after this many failures; the rest are reported skipped (default: never stop)."},
				{"host_timeout", "number", "With several hosts: seconds each host may take before it is reported failed (default: the tool's own limits)."},
			} {
				o := pyfmt.NewOMap()
				o.Set("anyOf", []any{map[string]any{"type": p.typ}, map[string]any{"type": "null"}})
				o.Set("default", nil)
				o.Set("description", p.desc)
				pm.Set(p.name, o)
			}
		}
	}
	return sortSchemaKeys(root)
}

// withDescription inserts a description key, keeping keys sorted the way
// pydantic emits them.
func withDescription(o *pyfmt.OMap, d string) *pyfmt.OMap {
	o.Set("description", d)
	return o
}

// sortSchemaKeys sorts the keys of every schema object (pydantic's order)
// except the contents of "properties", whose order is the parameter order.
func sortSchemaKeys(o *pyfmt.OMap) *pyfmt.OMap {
	out := pyfmt.NewOMap()
	keys := append([]string(nil), o.Keys()...)
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := o.Get(k)
		if k == "properties" {
			if pm, ok := v.(*pyfmt.OMap); ok {
				np := pyfmt.NewOMap()
				for _, pk := range pm.Keys() {
					pv, _ := pm.Get(pk)
					np.Set(pk, sortAny(pv))
				}
				out.Set(k, np)
				continue
			}
		}
		if k == "default" {
			out.Set(k, v)
			continue
		}
		out.Set(k, sortAny(v))
	}
	return out
}

func sortAny(v any) any {
	return pyfmt.MapObjects(v, func(o *pyfmt.OMap) any { return sortSchemaKeys(o) })
}

// OutputSchema builds the result schema: a model's schema, or the wrapped
// {"result": ...} form for text and list tools.
func (t *Tool) OutputSchema(fleet bool) *pyfmt.OMap {
	var root *pyfmt.OMap
	if t.Wrapped {
		root = pyfmt.NewOMap()
		props := pyfmt.NewOMap()
		props.Set("result", typeSchema(t.Returns, fleet))
		root.Set("properties", props)
		root.Set("required", []string{"result"})
		root.Set("type", "object")
		root.Set("x-fastmcp-wrap-result", true)
	} else {
		root = modelSchema(t.Returns, fleet)
	}
	if fleet && FanoutActions[t.Name] {
		fanoutOutput(root, t.Wrapped)
	}
	return root
}

// fanoutOutput extends a fan-out action's output schema in fleet mode:
// called on several hosts it answers {hosts, summary} (and "result", the
// grouped text, for a wrapped tool) instead of the tool's own result, so
// the model's fields are no longer required.
func fanoutOutput(root *pyfmt.OMap, wrapped bool) {
	pv, _ := root.Get("properties")
	props, _ := pv.(*pyfmt.OMap)
	if props == nil {
		return
	}
	nullStr := []any{map[string]any{"type": "string"}, map[string]any{"type": "null"}}
	host := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"host":       map[string]any{"type": "string"},
			"outcome":    map[string]any{"type": "string", "enum": []string{OutcomeOK, OutcomeError, OutcomeRefused, OutcomeSkipped}},
			"result":     map[string]any{},
			"error":      map[string]any{"anyOf": nullStr},
			"error_type": map[string]any{"anyOf": nullStr},
		},
		"required": []string{"host", "outcome", "result", "error", "error_type"},
	}
	props.Set("hosts", map[string]any{"type": "array", "items": host})
	count := map[string]any{"type": "integer"}
	props.Set("summary", map[string]any{
		"type":       "object",
		"properties": map[string]any{"hosts": count, "ok": count, "error": count, "refused": count, "skipped": count},
		"required":   []string{"hosts", "ok", "error", "refused", "skipped"},
	})
	if !wrapped {
		root.Delete("required")
	}
}

// hostModels are the result models that gain a host field in fleet mode.
var hostModels = map[string]bool{
	"SessionInfo": true, "WindowInfo": true, "PaneInfo": true,
	"PaneContentMatch": true, "ServerInfo": true, "PaneSnapshot": true,
}

func modelSchema(name string, fleet bool) *pyfmt.OMap { return modelSchemaNested(name, fleet, false) }

// modelSchemaNested builds a model schema; nested suppresses the fleet-only
// "servers" list inside its own items.
func modelSchemaNested(name string, fleet, nested bool) *pyfmt.OMap {
	fields, ok := Spec.Models[name]
	if !ok {
		panic("mcp: unknown model " + name)
	}
	root := pyfmt.NewOMap()
	props := pyfmt.NewOMap()
	var required []string
	for _, f := range fields {
		s := typeSchema(f.Type, fleet)
		if f.Nullable {
			n := pyfmt.NewOMap()
			n.Set("anyOf", []any{s, map[string]string{"type": "null"}})
			n.Set("default", f.Default)
			s = n
		} else if !f.Required {
			s.Set("default", f.Default)
		}
		props.Set(f.Field, s)
		if f.Required {
			required = append(required, f.Field)
		}
	}
	if fleet && hostModels[BaseModel(name)] {
		h := pyfmt.NewOMap()
		h.Set("anyOf", []any{map[string]string{"type": "string"}, map[string]string{"type": "null"}})
		h.Set("default", nil)
		props.Set("host", h)
		if name == "ServerInfo" && !nested {
			arr := pyfmt.NewOMap()
			arr.Set("items", modelSchemaNested(name, fleet, true))
			arr.Set("type", "array")
			props.Set("servers", arr)
		}
	}
	root.Set("properties", props)
	if len(required) > 0 {
		root.Set("required", required)
	}
	root.Set("type", "object")
	return root
}

func typeSchema(typ string, fleet bool) *pyfmt.OMap {
	o := pyfmt.NewOMap()
	switch {
	case typ == "string" || typ == "integer" || typ == "boolean" || typ == "number":
		o.Set("type", typ)
	case typ == "object":
		o.Set("additionalProperties", true)
		o.Set("type", "object")
	case typ == "any":
	case strings.HasPrefix(typ, "array<") && strings.HasSuffix(typ, ">"):
		inner := typ[len("array<") : len(typ)-1]
		o.Set("items", typeSchema(inner, fleet))
		o.Set("type", "array")
	case strings.HasPrefix(typ, "object<string,") && strings.HasSuffix(typ, ">"):
		inner := typ[len("object<string,") : len(typ)-1]
		var ap any
		if strings.Contains(inner, "|") {
			var alts []any
			for _, a := range strings.Split(inner, "|") {
				alts = append(alts, typeSchema(a, fleet))
			}
			ao := pyfmt.NewOMap()
			ao.Set("anyOf", alts)
			ap = ao
		} else {
			ap = typeSchema(inner, fleet)
		}
		o.Set("additionalProperties", ap)
		o.Set("type", "object")
	default:
		if _, ok := Spec.Models[typ]; ok {
			return modelSchema(typ, fleet)
		}
		panic("mcp: unknown type " + typ)
	}
	return o
}

// FanoutActions are the tools that act on several hosts in one call
// (fleet mode, a host pattern or list). Destructive tools never do.
var FanoutActions = map[string]bool{
	"run_command": true, "send_keys": true, "send_keys_batch": true,
	"create_session": true, "create_window": true, "set_environment": true,
	"set_option": true, "wait_for_text": true,
}

// Outcomes of one host in a fan-out action: a call's outcomes
// (vocab), or skipped.
const (
	OutcomeOK      = vocab.OutcomeOK
	OutcomeError   = vocab.OutcomeError
	OutcomeRefused = vocab.OutcomeRefused
	OutcomeSkipped = "skipped"
)
