package tools

import "encoding/json"

// mergeSearch merges search_panes results: all matches, counts added.
func mergeSearch(outs []any) (any, error) {
	merged := SearchPanesResult{Matches: []PaneContentMatch{}, TruncatedPanes: []string{}}
	for _, o := range outs {
		r, ok := o.(SearchPanesResult)
		if !ok {
			continue
		}
		merged.Matches = append(merged.Matches, r.Matches...)
		merged.TruncatedPanes = append(merged.TruncatedPanes, r.TruncatedPanes...)
		merged.TotalPanesMatched += r.TotalPanesMatched
		merged.Truncated = merged.Truncated || r.Truncated
		merged.Offset, merged.Limit = r.Offset, r.Limit
	}
	return merged, nil
}

// mergeServerInfo merges get_server_info results into one aggregate
// (host "*") listing each host's info.
func mergeServerInfo(outs []any) (any, error) {
	star := "*"
	agg := ServerInfo{Host: &star, Servers: []ServerInfo{}}
	for _, o := range outs {
		si, ok := o.(ServerInfo)
		if !ok {
			continue
		}
		agg.Servers = append(agg.Servers, si)
		agg.IsAlive = agg.IsAlive || si.IsAlive
		agg.SessionCount += si.SessionCount
		agg.SocketName, agg.SocketPath = si.SocketName, si.SocketPath
	}
	return agg, nil
}

// mergeLists concatenates list results in host order.
func mergeLists(outs []any) (any, error) {
	var merged []any
	for _, o := range outs {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, err
		}
		for _, it := range items {
			merged = append(merged, it)
		}
	}
	if merged == nil {
		merged = []any{}
	}
	return merged, nil
}
