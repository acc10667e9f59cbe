package plan

import "sort"

// clusterScopedApp names the Application proposed for cluster-scoped objects.
const clusterScopedApp = "adopt-cluster"

// Group proposes one Application per namespace (and one for cluster-scoped
// objects), exported under adopted/<namespace>. It sets Object.App.
func (p *Plan) Group() {
	byApp := map[string]*Application{}
	for i := range p.Objects {
		o := &p.Objects[i]
		name, dir := clusterScopedApp, "adopted/_cluster"
		if o.Namespace != "" {
			name, dir = "adopt-"+o.Namespace, "adopted/"+o.Namespace
		}
		o.App = name
		a := byApp[name]
		if a == nil {
			a = &Application{Name: name, Namespace: o.Namespace, Project: "default", SourcePath: dir}
			byApp[name] = a
		}
		a.Objects = append(a.Objects, o.Ref())
	}
	p.Applications = p.Applications[:0]
	for _, a := range byApp {
		sort.Strings(a.Objects)
		p.Applications = append(p.Applications, *a)
	}
	sort.Slice(p.Applications, func(i, j int) bool { return p.Applications[i].Name < p.Applications[j].Name })
}
