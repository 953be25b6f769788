package surface

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

// ---- surface ----

//go:embed surface_jobs.json
var jobsSurfaceJSON []byte

// ExtParam is a parameter the extensions add to a reference tool, with its
// schema.
type ExtParam struct {
	Param
	Schema json.RawMessage `json:"schema"`
}

type JobsTool struct {
	Tool
	// FleetParams are left out of the schema in local mode.
	FleetParams []string `json:"fleet_params"`
}

type JobsSurface struct {
	Tools       []*JobsTool           `json:"tools"`
	Params      map[string][]ExtParam `json:"params"`
	ModelFields map[string][]Field    `json:"model_fields"`
	// ToolModelFields are fields the extensions add to one tool's result
	// model only (get_pane_info's PaneInfo, not the other tools that
	// answer a PaneInfo): its model is ToolExtModel(returns, tool).
	ToolModelFields map[string][]Field `json:"tool_model_fields"`
	Models          map[string][]Field `json:"models"`
}

// ExtModelSuffix names the extended copy of a model (its schema is the
// model's plus the extension fields; the name never reaches a client).
const ExtModelSuffix = "+ext"

// ToolExtModel names the extended copy of model returns for tool alone.
func ToolExtModel(returns, tool string) string {
	return returns + "+" + tool + ExtModelSuffix
}

// BaseModel is the model an extended copy was made from (name itself for
// a model of the reference).
func BaseModel(name string) string {
	base, _, _ := strings.Cut(name, "+")
	return base
}

var JobsSpec = mustLoadJobsSurface()

func mustLoadJobsSurface() *JobsSurface {
	var js JobsSurface
	if err := json.Unmarshal(jobsSurfaceJSON, &js); err != nil {
		panic(fmt.Sprintf("mcp: embedded surface_jobs.json: %v", err))
	}
	for name, m := range js.Models {
		Spec.Models[name] = m
	}
	for name, extra := range js.ModelFields {
		base, ok := Spec.Models[name]
		if !ok {
			panic("mcp: surface_jobs.json extends unknown model " + name)
		}
		Spec.Models[name+ExtModelSuffix] = append(slices.Clone(base), extra...)
	}
	for tool, extra := range js.ToolModelFields {
		i := slices.IndexFunc(Spec.Tools, func(t *Tool) bool { return t.Name == tool })
		if i < 0 {
			panic("mcp: surface_jobs.json extends the result of unknown tool " + tool)
		}
		returns := Spec.Tools[i].Returns
		base, ok := Spec.Models[returns]
		if !ok {
			panic("mcp: surface_jobs.json extends " + tool + "'s unknown model " + returns)
		}
		Spec.Models[ToolExtModel(returns, tool)] = append(slices.Clone(base), extra...)
	}
	return &js
}

// JobTools are the extension tools' specs (joined to toolDefs with the
// others).
func JobTools() []*Tool {
	out := make([]*Tool, len(JobsSpec.Tools))
	for i, t := range JobsSpec.Tools {
		out[i] = &t.Tool
	}
	return out
}

func IsJobTool(name string) bool {
	for _, t := range JobsSpec.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// WithParams returns a copy of ts with params appended (to the parameter
// list and to the input schema's properties).
func WithParams(ts *Tool, params []ExtParam) *Tool {
	c := *ts
	c.Params = slices.Clone(ts.Params)
	root := decodeSchema(ts)
	props, _ := root.Get("properties")
	pm := props.(*pyfmt.OMap)
	for _, p := range params {
		c.Params = append(c.Params, p.Param)
		v, err := pyfmt.DecodeOrdered(p.Schema)
		if err != nil {
			panic(fmt.Sprintf("mcp: schema of %s.%s: %v", ts.Name, p.Name, err))
		}
		pm.Set(p.Name, v)
	}
	c.InputSchemaRaw = json.RawMessage(pyfmt.Compact(root))
	return &c
}

// WithoutParam returns a copy of ts without the parameter name.
func WithoutParam(ts *Tool, name string) *Tool {
	c := *ts
	c.Params = slices.DeleteFunc(slices.Clone(ts.Params), func(p Param) bool { return p.Name == name })
	root := decodeSchema(ts)
	props, _ := root.Get("properties")
	props.(*pyfmt.OMap).Delete(name)
	c.InputSchemaRaw = json.RawMessage(pyfmt.Compact(root))
	return &c
}

func decodeSchema(ts *Tool) *pyfmt.OMap {
	v, err := pyfmt.DecodeOrdered(ts.InputSchemaRaw)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %s: %v", ts.Name, err))
	}
	root := v.(*pyfmt.OMap)
	if _, ok := root.Get("properties"); !ok {
		root.Set("properties", pyfmt.NewOMap())
	}
	return root
}

// ---- descriptions ----

var jobToolDescriptions = map[string]string{
	"get_job":    "Report a job started by run_command (detach=true, or a run_command that answered pending): status running, exited or lost (its pane or tmux server went away without an exit status), exit status, start and end, and the last lines of its output read from the pane (at most the visible screen, from the line the command was typed on). Works after fleetmux restarted or lost its SSH connection: the host keeps the exit status.",
	"list_jobs":  "List the jobs run_command started (detach=true or pending), newest first, with their current status; running jobs are checked on their hosts. Filter by host, status and since.",
	"cancel_job": "Interrupt a running job: types C-c into its pane, then after grace_seconds sends SIGTERM and, 2 s later, SIGKILL to the pane's foreground process group (never the pane's shell). The pane and its shell stay. Returns the job as it is afterwards and the signals sent.",
}

var jobParamDescriptions = map[string]string{
	"wait_for_text.stop_on_input": "Also end the wait, with outcome input, when the pane's foreground program is waiting for the user to type (a line, a password, keys), read from its process and terminal state; a shell prompt or a full-screen program does not count. Checked at most every 250 ms.",
	"run_command.detach":          "Return at once with a job id instead of waiting: the command runs on in the pane and its exit status is kept on the host; read it with get_job (also after a restart), stop it with cancel_job. timeout is not used.",
	"get_job.job_id":              "Job id returned by run_command (job_id) or list_jobs.",
	"cancel_job.job_id":           "Job id returned by run_command (job_id) or list_jobs.",
	"get_job.max_lines":           "Keep at most this many of the last output lines; null keeps everything read.",
	"list_jobs.host":              "Only jobs on this host, or hosts matching this glob.",
	"list_jobs.status":            "Only jobs in this status: running, exited or lost.",
	"list_jobs.since":             "Only jobs started since this age (90m, 36h, 7d, 1d12h) or RFC 3339 time.",
	"list_jobs.limit":             "Return at most this many jobs (newest first).",
	"cancel_job.grace_seconds":    "Seconds to wait after C-c before SIGTERM (0 to 600).",
}

func init() {
	for k, v := range jobToolDescriptions {
		toolDescriptions[k] = v
	}
	for k, v := range jobParamDescriptions {
		paramDescriptions[k] = v
	}
}
