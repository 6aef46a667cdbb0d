// cilium-oracle drives Cilium's own operator multi-pool allocator (operator/pkg/ipam/allocator/
// multipool, over cidralloc and pkg/ipam/cidrset) through seeded scenarios, writes the resulting
// CiliumPodIPPools and CiliumNodes as YAML, restores a fresh allocator from those files exactly as
// the operator does after a restart, and probes it until it refuses. The figures it prints are
// the judge of kubectl-ciliumpool's allocator (tests/integration/cilium_oracle.rs).
//
//	cilium-oracle version
//	cilium-oracle batch --kind plain|emulated --first N --count K --out DIR   (DIR/<kind>-<seed>/)
//	cilium-oracle scenario --kind plain|emulated --seed N --out DIR
//	cilium-oracle restore DIR                 (pools.yaml + nodes.yaml written by hand or above)
//
// Results are JSON on stdout (batch: one array).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cilium/cilium/operator/pkg/ipam/allocator/multipool"
	iputil "github.com/cilium/cilium/pkg/ip"
	"github.com/cilium/cilium/pkg/ipam/types"
	"sigs.k8s.io/yaml"
)

// Set by build.sh from its pin.
var ciliumVersion = "unknown"

func main() {
	if len(os.Args) < 2 {
		fail("usage: cilium-oracle version|batch|scenario|restore ...")
	}
	switch os.Args[1] {
	case "version":
		fmt.Printf("cilium-oracle cilium=%s reservations=emulated\n", ciliumVersion)
	case "batch", "scenario":
		fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
		kind := fs.String("kind", "plain", "plain or emulated (reserved ranges emulated in the real cidrset)")
		first := fs.Uint64("first", 1, "first seed (batch)")
		count := fs.Uint64("count", 1, "number of seeds (batch)")
		seed := fs.Uint64("seed", 1, "seed (scenario)")
		out := fs.String("out", "", "output directory")
		_ = fs.Parse(os.Args[2:])
		if *out == "" || (*kind != "plain" && *kind != "emulated") {
			fail("--out DIR and --kind plain|emulated are required")
		}
		if os.Args[1] == "scenario" {
			*first, *count = *seed, 1
		}
		var results []*Result
		for s := *first; s < *first+*count; s++ {
			dir := *out
			if os.Args[1] == "batch" {
				dir = filepath.Join(*out, fmt.Sprintf("%s-%d", *kind, s))
			}
			sc := generate(s, *kind)
			sc.write(dir)
			r := restoreDir(dir)
			r.Seed, r.Kind, r.OperatorCrashes = s, *kind, sc.Crashes
			results = append(results, r)
		}
		if os.Args[1] == "scenario" {
			emit(results[0])
		} else {
			emit(results)
		}
	case "restore":
		if len(os.Args) != 3 {
			fail("usage: cilium-oracle restore DIR")
		}
		emit(restoreDir(os.Args[2]))
	default:
		fail("unknown command " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "cilium-oracle:", msg)
	os.Exit(2)
}

func emit(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		fail(err.Error())
	}
}

// ---------------------------------------------------------------------------------------------
// Objects, in the shapes Cilium serves (v2alpha1 pools; v2 upstream `pool[]` for reserved ranges).

type Meta struct {
	Name string `json:"name"`
}

type ReservedRange struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

type PoolEntry struct {
	CIDR           string          `json:"cidr"`
	ReservedRanges []ReservedRange `json:"reservedRanges"`
}

type FamilySpec struct {
	CIDRs    []string    `json:"cidrs"`
	MaskSize int         `json:"maskSize"`
	Pool     []PoolEntry `json:"pool,omitempty"`
}

type PoolSpec struct {
	IPv4         *FamilySpec `json:"ipv4,omitempty"`
	IPv6         *FamilySpec `json:"ipv6,omitempty"`
	AllowFirstIP bool        `json:"allowFirstIP,omitempty"`
	AllowLastIP  bool        `json:"allowLastIP,omitempty"`
}

type PoolObject struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Meta     `json:"metadata"`
	Spec       PoolSpec `json:"spec"`
}

func (p *PoolObject) family(v6 bool) *FamilySpec {
	if v6 {
		return p.Spec.IPv6
	}
	return p.Spec.IPv4
}

// NodeObject is a CiliumNode reduced to what the allocator reads; its pools field is Cilium's own
// type, so the YAML is what the operator writes and reads.
type NodeObject struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Meta     `json:"metadata"`
	Spec       NodeSpec `json:"spec"`
}

type NodeSpec struct {
	IPAM struct {
		Pools types.IPAMPoolSpec `json:"pools"`
	} `json:"ipam"`
}

type Scenario struct {
	Pools   []*PoolObject
	Nodes   []*NodeObject
	Crashes int
}

func (s *Scenario) write(dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err.Error())
	}
	docs := func(objs []any) []byte {
		var b bytes.Buffer
		for i, o := range objs {
			y, err := yaml.Marshal(o)
			if err != nil {
				fail(err.Error())
			}
			if i > 0 {
				b.WriteString("---\n")
			}
			b.Write(y)
		}
		return b.Bytes()
	}
	var pools, nodes []any
	for _, p := range s.Pools {
		pools = append(pools, p)
	}
	for _, n := range s.Nodes {
		nodes = append(nodes, n)
	}
	must(os.WriteFile(filepath.Join(dir, "pools.yaml"), docs(pools), 0o644))
	must(os.WriteFile(filepath.Join(dir, "nodes.yaml"), docs(nodes), 0o644))
}

func must(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func readDocs(path string) [][]byte {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	must(err)
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), data...), []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func readScenario(dir string) *Scenario {
	s := &Scenario{}
	for _, d := range readDocs(filepath.Join(dir, "pools.yaml")) {
		p := &PoolObject{}
		if err := yaml.Unmarshal(d, p); err != nil {
			fail(fmt.Sprintf("%s/pools.yaml: %v", dir, err))
		}
		s.Pools = append(s.Pools, p)
	}
	for _, d := range readDocs(filepath.Join(dir, "nodes.yaml")) {
		n := &NodeObject{}
		if err := yaml.Unmarshal(d, n); err != nil {
			fail(fmt.Sprintf("%s/nodes.yaml: %v", dir, err))
		}
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

// ---------------------------------------------------------------------------------------------
// Restore and probe.

type CidrResult struct {
	CIDR            string `json:"cidr"`
	CapacityBlocks  int    `json:"capacityBlocks"`
	AllocatedBlocks int    `json:"allocatedBlocks"`
	WithheldBlocks  int    `json:"withheldBlocks"`
	FreeBlocks      int    `json:"freeBlocks"`
}

type FamilyResult struct {
	Family          string        `json:"family"`
	CapacityBlocks  int           `json:"capacityBlocks"`
	AllocatedBlocks int           `json:"allocatedBlocks"`
	WithheldBlocks  int           `json:"withheldBlocks"`
	FreeBlocks      int           `json:"freeBlocks"`
	NextBlock       *string       `json:"nextBlock"`
	CIDRs           []*CidrResult `json:"cidrs"`
}

type PoolResult struct {
	Name string `json:"name"`
	// UpsertPool's error: the operator then has no such pool (both families).
	Rejected string          `json:"rejected,omitempty"`
	Families []*FamilyResult `json:"families"`
}

type Result struct {
	Seed   uint64 `json:"seed,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Cilium string `json:"cilium"`
	// "none", or "emulated" when the pools have reserved ranges (occupied in the real cidrset).
	Reservations string `json:"reservations"`
	// The figures differ between restoring nodes in name order and in reverse order: the
	// operator's result depends on the informer's order, so no prediction can be exact.
	OrderDependent bool `json:"orderDependent"`
	// Panics of Cilium's allocator while the scenario's history ran (the operator restarted).
	OperatorCrashes int           `json:"operatorCrashes,omitempty"`
	Pools           []*PoolResult `json:"pools"`
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// restore rebuilds an allocator as the operator does after a restart (multipool.go
// startIPPoolAllocator, then node_handler.go upsertLocked before Resync): every pool is upserted,
// then every node's allocations are occupied (AllocateToNode before RestoreFinished only occupies
// and releases), then RestoreFinished.
func restore(s *Scenario, withNodes, reverse, reservations bool) (*multipool.PoolAllocator, map[string]error) {
	a := multipool.NewPoolAllocator(quiet, true, true)
	rejected := map[string]error{}
	for _, p := range s.Pools {
		if err := upsertPool(a, p); err != nil {
			rejected[p.Metadata.Name] = err
		}
	}
	if withNodes {
		nodes := slices.Clone(s.Nodes)
		sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Metadata.Name < nodes[j].Metadata.Name })
		if reverse {
			slices.Reverse(nodes)
		}
		for _, n := range nodes {
			_ = a.AllocateToNode(n.Metadata.Name, n.Spec.IPAM.Pools)
		}
	}
	a.RestoreFinished()
	if reservations {
		for _, p := range s.Pools {
			for _, v6 := range []bool{false, true} {
				f := p.family(v6)
				if f == nil {
					continue
				}
				for _, e := range f.Pool {
					cidr, err := netip.ParsePrefix(e.CIDR)
					if err != nil || !slices.Contains(f.CIDRs, e.CIDR) {
						continue
					}
					for _, r := range e.ReservedRanges {
						from, err1 := netip.ParseAddr(r.Start)
						to, err2 := netip.ParseAddr(r.End)
						if err1 != nil || err2 != nil || from.Is4() != cidr.Addr().Is4() || to.Less(from) ||
							!cidr.Contains(from) || !cidr.Contains(to) {
							continue // invalid ranges are ignored, as the plugin reports and ignores them
						}
						_ = a.OracleOccupyRange(p.Metadata.Name, cidr, from, to)
					}
				}
			}
		}
	}
	return a, rejected
}

// probe asks for blocks of the pool until the allocator refuses: first one address per family (the
// next block handed out), then, node after node, more addresses than any pool has.
func probe(a *multipool.PoolAllocator, pool string) (next map[bool]netip.Prefix, blocks map[bool][]netip.Prefix) {
	next, blocks = map[bool]netip.Prefix{}, map[bool][]netip.Prefix{}
	for i := 0; ; i++ {
		need := types.IPAMPoolDemand{IPv4Addrs: 1 << 62, IPv6Addrs: 1 << 62}
		if i == 0 {
			need = types.IPAMPoolDemand{IPv4Addrs: 1, IPv6Addrs: 1}
		}
		node := fmt.Sprintf("oracle-probe.%s.%d", pool, i) // not a CiliumNode name of any scenario
		_ = a.AllocateToNode(node, types.IPAMPoolSpec{Requested: []types.IPAMPoolRequest{{Pool: pool, Needed: need}}})
		got := 0
		for _, alloc := range a.AllocatedPools(node) {
			for _, c := range alloc.CIDRs {
				v6 := c.Addr().Is6()
				if i == 0 {
					next[v6] = c.Prefix
				}
				blocks[v6] = append(blocks[v6], c.Prefix)
				got++
			}
		}
		if got == 0 {
			return next, blocks
		}
	}
}

type counts struct {
	total  int
	perIdx []int
}

func count(f *FamilySpec, blocks []netip.Prefix) counts {
	c := counts{perIdx: make([]int, len(f.CIDRs))}
	for _, b := range blocks {
		c.total++
		for i, s := range f.CIDRs {
			if p, err := netip.ParsePrefix(s); err == nil && p.Masked().Contains(b.Addr()) {
				c.perIdx[i]++
				break
			}
		}
	}
	return c
}

func restoreDir(dir string) *Result {
	s := readScenario(dir)
	emulated := false
	for _, p := range s.Pools {
		for _, v6 := range []bool{false, true} {
			if f := p.family(v6); f != nil {
				for _, e := range f.Pool {
					emulated = emulated || len(e.ReservedRanges) > 0
				}
			}
		}
	}
	fresh, rejected := restore(s, false, false, false) // capacity
	plain, _ := restore(s, true, false, false)         // allocated = capacity - free
	plainRev, _ := restore(s, true, true, false)       // order check
	reserved, _ := restore(s, true, false, emulated)   // withheld = free(plain) - free(reserved)
	res := &Result{Cilium: ciliumVersion, Reservations: "none"}
	if emulated {
		res.Reservations = "emulated"
	}
	for _, p := range s.Pools {
		name := p.Metadata.Name
		pr := &PoolResult{Name: name}
		if err := rejected[name]; err != nil {
			pr.Rejected = err.Error()
		}
		_, capBlocks := probe(fresh, name)
		plainNext, plainBlocks := probe(plain, name)
		_, revBlocks := probe(plainRev, name)
		next, freeBlocks := plainNext, plainBlocks
		if emulated {
			next, freeBlocks = probe(reserved, name)
		}
		for _, v6 := range []bool{false, true} {
			f := p.family(v6)
			if f == nil {
				continue
			}
			if !slices.Equal(prefixStrings(plainBlocks[v6]), prefixStrings(revBlocks[v6])) {
				res.OrderDependent = true
			}
			capC, plainC, freeC := count(f, capBlocks[v6]), count(f, plainBlocks[v6]), count(f, freeBlocks[v6])
			fr := &FamilyResult{
				Family:          map[bool]string{false: "ipv4", true: "ipv6"}[v6],
				CapacityBlocks:  capC.total,
				AllocatedBlocks: capC.total - plainC.total,
				WithheldBlocks:  plainC.total - freeC.total,
				FreeBlocks:      freeC.total,
			}
			if n, ok := next[v6]; ok {
				text := n.String()
				fr.NextBlock = &text
			}
			if pr.Rejected == "" {
				for i, c := range f.CIDRs {
					fr.CIDRs = append(fr.CIDRs, &CidrResult{
						CIDR:            c,
						CapacityBlocks:  capC.perIdx[i],
						AllocatedBlocks: capC.perIdx[i] - plainC.perIdx[i],
						WithheldBlocks:  plainC.perIdx[i] - freeC.perIdx[i],
						FreeBlocks:      freeC.perIdx[i],
					})
				}
			}
			pr.Families = append(pr.Families, fr)
		}
		res.Pools = append(res.Pools, pr)
	}
	sort.Slice(res.Pools, func(i, j int) bool { return res.Pools[i].Name < res.Pools[j].Name })
	return res
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------------------------
// Scenario generation: a pool history through the real allocator, then hand edits.

type gen struct {
	rng      *rand.Rand
	kind     string
	live     *multipool.PoolAllocator
	pools    map[string]*PoolObject // the objects as they are in the cluster (possibly rejected)
	deleted  map[string]*PoolObject
	removed  map[string][]string // pool -> CIDRs taken out, for re-adding
	nodes    map[string]*NodeObject
	gone     []string // deleted node names
	taken    []netip.Prefix
	nextNode int
	crashes  int // panics of Cilium's code during the history (each followed by a restart)
}

func (g *gen) chance(p float64) bool { return g.rng.Float64() < p }

// randPrefix picks an aligned prefix of length bits that overlaps nothing taken so far.
func (g *gen) randPrefix(v6 bool, bits int) netip.Prefix {
	for try := 0; ; try++ {
		var a netip.Addr
		if v6 {
			var b [16]byte
			b[0], b[1] = 0xfd, 0x00
			for i := 2; i < 16; i++ {
				b[i] = byte(g.rng.UintN(256))
			}
			a = netip.AddrFrom16(b)
		} else {
			a = netip.AddrFrom4([4]byte{10, byte(g.rng.UintN(256)), byte(g.rng.UintN(256)), byte(g.rng.UintN(256))})
		}
		p := netip.PrefixFrom(a, bits).Masked()
		if try > 50 || !slices.ContainsFunc(g.taken, p.Overlaps) {
			g.taken = append(g.taken, p)
			return p
		}
	}
}

// spell writes a CIDR the way a person might: with host bits set, upper case, zeros expanded.
func (g *gen) spell(p netip.Prefix) string {
	if !g.chance(0.15) {
		return p.String()
	}
	addr := p.Addr()
	hostBits := addr.BitLen() - p.Bits()
	if hostBits > 0 && g.chance(0.6) {
		b := addr.AsSlice()
		b[len(b)-1] |= byte(1 + g.rng.IntN(min(255, (1<<min(hostBits, 8))-1)))
		a, _ := netip.AddrFromSlice(b)
		return netip.PrefixFrom(a, p.Bits()).String()
	}
	if addr.Is6() {
		if g.chance(0.5) {
			return strings.ToUpper(p.String())
		}
		return addr.StringExpanded() + fmt.Sprintf("/%d", p.Bits())
	}
	return p.String()
}

func blockAddrs(v6 bool, mask int) float64 {
	bits := 32
	if v6 {
		bits = 128
	}
	return float64(uint64(1) << min(62, bits-mask))
}

func (g *gen) newFamily(v6 bool) *FamilySpec {
	var mask int
	if v6 {
		mask = []int{64, 96, 104, 112, 116, 120, 122, 124, 126, 127, 128}[g.rng.IntN(11)]
		if g.chance(0.6) {
			mask = 112 + g.rng.IntN(17)
		}
	} else {
		mask = 16 + g.rng.IntN(17)
		if g.chance(0.6) {
			mask = 22 + g.rng.IntN(11)
		}
	}
	f := &FamilySpec{MaskSize: mask}
	for n := 1 + g.rng.IntN(3); n > 0; n-- {
		f.CIDRs = append(f.CIDRs, g.spell(g.randPrefix(v6, g.cidrBits(v6, mask))))
	}
	return f
}

// cidrBits: a CIDR a few bits shorter than the mask, sometimes exactly 2^16 blocks (IPv6), beyond
// (the operator rejects the pool), or smaller than a block.
func (g *gen) cidrBits(v6 bool, mask int) int {
	k := g.rng.IntN(5)
	switch {
	case g.chance(0.05):
		k = -1 - g.rng.IntN(2)
	case v6 && mask >= 112 && g.chance(0.04):
		k = 16
	case v6 && g.chance(0.04):
		k = 17 + g.rng.IntN(4)
	case g.chance(0.1):
		k = 5 + g.rng.IntN(5)
	}
	bits := mask - k
	maxBits := 32
	if v6 {
		maxBits = 128
	}
	return max(8, min(maxBits, bits))
}

// guard runs one call into the live allocator. Should Cilium's code panic (v1.20.2 does in
// markOrphan once cleanupOrphans has dropped one family's map, e.g. DeletePool of a pool whose node
// kept orphans of only the other family), the operator process dies and restarts: the live
// allocator is rebuilt from the objects, exactly as after any restart.
func (g *gen) guard(call func()) {
	defer func() {
		if r := recover(); r != nil {
			g.crashes++
			g.live, _ = restore(g.scenario(), true, false, false)
		}
	}()
	call()
}

func (g *gen) scenario() *Scenario {
	s := &Scenario{}
	for _, name := range g.poolNames() {
		s.Pools = append(s.Pools, g.pools[name])
	}
	for _, name := range g.nodeNames() {
		s.Nodes = append(s.Nodes, g.nodes[name])
	}
	return s
}

func (g *gen) upsert(p *PoolObject) {
	g.guard(func() { _ = upsertPool(g.live, p) })
}

// upsertPool hands a pool object to the allocator as the operator's pool watcher does
// (pool_handler.go UpsertPool: a missing family is no CIDRs and mask 0).
func upsertPool(a *multipool.PoolAllocator, p *PoolObject) error {
	var opts []multipool.PoolOption
	if p.Spec.AllowFirstIP {
		opts = append(opts, multipool.WithAllowFirstIP())
	}
	if p.Spec.AllowLastIP {
		opts = append(opts, multipool.WithAllowLastIP())
	}
	var v4, v6 []string
	var m4, m6 int
	if f := p.Spec.IPv4; f != nil {
		v4, m4 = f.CIDRs, f.MaskSize
	}
	if f := p.Spec.IPv6; f != nil {
		v6, m6 = f.CIDRs, f.MaskSize
	}
	return a.UpsertPool(p.Metadata.Name, v4, m4, v6, m6, opts...)
}

func clonePool(p *PoolObject) *PoolObject {
	b, _ := json.Marshal(p)
	q := &PoolObject{}
	_ = json.Unmarshal(b, q)
	return q
}

func (g *gen) poolNames() []string {
	var names []string
	for n := range g.pools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (g *gen) nodeNames() []string {
	var names []string
	for n := range g.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (g *gen) pick(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[g.rng.IntN(len(names))]
}

// sync runs the node's controller once: AllocateToNode, then the CiliumNode gets AllocatedPools.
func (g *gen) sync(n *NodeObject) {
	g.guard(func() {
		_ = g.live.AllocateToNode(n.Metadata.Name, n.Spec.IPAM.Pools)
		n.Spec.IPAM.Pools.Allocated = g.live.AllocatedPools(n.Metadata.Name)
	})
}

func (g *gen) demand(n *NodeObject, pool string) {
	p := g.pools[pool]
	if p == nil {
		p = g.deleted[pool]
	}
	need := types.IPAMPoolDemand{}
	if p != nil {
		if f := p.Spec.IPv4; f != nil {
			need.IPv4Addrs = int(blockAddrs(false, f.MaskSize) * g.rng.Float64() * 3)
		}
		if f := p.Spec.IPv6; f != nil {
			need.IPv6Addrs = int(min(1<<40, blockAddrs(true, f.MaskSize)*g.rng.Float64()*3))
		}
	}
	reqs := &n.Spec.IPAM.Pools.Requested
	i := slices.IndexFunc(*reqs, func(r types.IPAMPoolRequest) bool { return r.Pool == pool })
	if i < 0 {
		*reqs = append(*reqs, types.IPAMPoolRequest{Pool: pool})
		i = len(*reqs) - 1
	}
	(*reqs)[i].Needed = need
	// The agent releases blocks it no longer needs by dropping them from allocated[].
	if g.chance(0.4) {
		for ai := range n.Spec.IPAM.Pools.Allocated {
			a := &n.Spec.IPAM.Pools.Allocated[ai]
			if a.Pool == pool && len(a.CIDRs) > 0 {
				j := g.rng.IntN(len(a.CIDRs))
				a.CIDRs = slices.Delete(slices.Clone(a.CIDRs), j, j+1)
			}
		}
	}
	g.sync(n)
}

func (g *gen) addNode() {
	var name string
	if len(g.gone) > 0 && g.chance(0.5) {
		name, g.gone = g.gone[0], g.gone[1:]
	} else {
		name = fmt.Sprintf("node-%02d", g.nextNode)
		g.nextNode++
	}
	n := &NodeObject{APIVersion: "cilium.io/v2", Kind: "CiliumNode", Metadata: Meta{Name: name}}
	g.nodes[name] = n
	for _, pool := range g.poolNames() {
		if g.chance(0.6) {
			g.demand(n, pool)
		}
	}
}

func generate(seed uint64, kind string) *Scenario {
	salt := uint64(0xc1110)
	if kind == "emulated" {
		salt = 0xe3
	}
	g := &gen{
		rng: rand.New(rand.NewPCG(seed, salt)), kind: kind,
		live:  multipool.NewPoolAllocator(quiet, true, true),
		pools: map[string]*PoolObject{}, deleted: map[string]*PoolObject{}, removed: map[string][]string{},
		nodes: map[string]*NodeObject{},
	}
	for i := range 1 + g.rng.IntN(4) {
		p := &PoolObject{APIVersion: "cilium.io/v2alpha1", Kind: "CiliumPodIPPool", Metadata: Meta{Name: fmt.Sprintf("pool-%c", 'a'+i)}}
		if g.chance(0.8) {
			p.Spec.IPv4 = g.newFamily(false)
		}
		if p.Spec.IPv4 == nil || g.chance(0.5) {
			p.Spec.IPv6 = g.newFamily(true)
		}
		p.Spec.AllowFirstIP, p.Spec.AllowLastIP = g.chance(0.3), g.chance(0.3)
		// A CIDR shared with an earlier pool, or overlapping one of the pool's own.
		if f := p.Spec.IPv4; f != nil && i > 0 && g.chance(0.1) {
			if other := g.pools[fmt.Sprintf("pool-%c", 'a'+g.rng.IntN(i))]; other.Spec.IPv4 != nil {
				f.CIDRs = append(f.CIDRs, other.Spec.IPv4.CIDRs[0])
			}
		}
		if f := p.Spec.IPv4; f != nil && g.chance(0.04) {
			if c, err := netip.ParsePrefix(f.CIDRs[0]); err == nil && c.Bits() < 32 {
				f.CIDRs = append(f.CIDRs, netip.PrefixFrom(c.Masked().Addr(), c.Bits()+1).String())
			}
		}
		g.pools[p.Metadata.Name] = p
		g.upsert(p)
	}
	g.live.RestoreFinished()
	for range 1 + g.rng.IntN(6) {
		g.addNode()
	}
	for range 10 + g.rng.IntN(30) {
		g.event()
	}
	// A cluster with no pool left says little: re-create one that was deleted.
	if len(g.pools) == 0 && len(g.deleted) > 0 {
		names := slices.Sorted(maps.Keys(g.deleted))
		p := g.deleted[names[0]]
		g.pools[names[0]] = p
		delete(g.deleted, names[0])
		g.upsert(p)
	}
	// Every controller runs once more, so the CiliumNodes are what the live operator wrote.
	for _, name := range g.nodeNames() {
		g.sync(g.nodes[name])
	}
	g.perturb()
	if kind == "emulated" {
		g.reserve()
	}
	s := g.scenario()
	s.Crashes = g.crashes
	return s
}

func (g *gen) event() {
	r := g.rng.Float64()
	node, pool := g.pick(g.nodeNames()), g.pick(g.poolNames())
	switch {
	case r < 0.4 && node != "" && pool != "":
		g.demand(g.nodes[node], pool)
	case r < 0.48 && node != "":
		g.guard(func() { _ = g.live.ReleaseNode(node) })
		delete(g.nodes, node)
		g.gone = append(g.gone, node)
	case r < 0.58:
		g.addNode()
	case r < 0.64 && pool != "":
		g.guard(func() { _ = g.live.DeletePool(pool) })
		g.deleted[pool] = g.pools[pool]
		delete(g.pools, pool)
	case r < 0.7 && len(g.deleted) > 0:
		var names []string
		for n := range g.deleted {
			names = append(names, n)
		}
		sort.Strings(names)
		name := g.pick(names)
		p := g.deleted[name]
		delete(g.deleted, name)
		if g.chance(0.3) { // re-created with another mask size: nodes keep blocks of the old size
			if p.Spec.IPv4 != nil {
				p.Spec.IPv4.MaskSize = max(p.Spec.IPv4.MaskSize-1, min(32, p.Spec.IPv4.MaskSize+1-2*g.rng.IntN(2)))
			}
		}
		g.pools[name] = p
		g.upsert(p)
	case r < 0.77 && pool != "":
		p := g.pools[pool]
		for _, f := range []*FamilySpec{p.Spec.IPv4, p.Spec.IPv6} {
			if f != nil && len(f.CIDRs) > 1 {
				i := g.rng.IntN(len(f.CIDRs))
				g.removed[pool] = append(g.removed[pool], f.CIDRs[i])
				f.CIDRs = slices.Delete(f.CIDRs, i, i+1)
				break
			}
		}
		g.upsert(p)
	case r < 0.82 && pool != "" && len(g.removed[pool]) > 0:
		p := g.pools[pool]
		c := g.removed[pool][0]
		g.removed[pool] = g.removed[pool][1:]
		v6 := strings.Contains(c, ":")
		if f := p.family(v6); f != nil && !slices.Contains(f.CIDRs, c) {
			f.CIDRs = append(f.CIDRs, c)
		}
		g.upsert(p)
	case r < 0.86 && pool != "":
		// An edit the operator refuses (overlap, too many IPv6 blocks, mask change): the live
		// allocator keeps the old pool, the object in the cluster is the new one.
		p := g.pools[pool]
		switch {
		case p.Spec.IPv6 != nil && g.chance(0.4):
			p.Spec.IPv6.CIDRs = append(p.Spec.IPv6.CIDRs, g.randPrefix(true, max(8, p.Spec.IPv6.MaskSize-17-g.rng.IntN(3))).String())
		case p.Spec.IPv4 != nil && g.chance(0.5):
			if c, err := netip.ParsePrefix(p.Spec.IPv4.CIDRs[0]); err == nil && c.Bits() > 8 {
				p.Spec.IPv4.CIDRs = append(p.Spec.IPv4.CIDRs, netip.PrefixFrom(c.Addr(), c.Bits()-1).Masked().String())
			}
		case p.Spec.IPv4 != nil:
			p.Spec.IPv4.MaskSize = min(32, p.Spec.IPv4.MaskSize+1)
		}
		g.upsert(p)
	case r < 0.92 && pool != "":
		p := g.pools[pool]
		for _, v6 := range []bool{false, true} {
			if f := p.family(v6); f != nil && len(f.CIDRs) < 5 {
				f.CIDRs = append(f.CIDRs, g.spell(g.randPrefix(v6, g.cidrBits(v6, f.MaskSize))))
				break
			}
		}
		g.upsert(p)
	default:
		if node != "" {
			g.sync(g.nodes[node])
		}
	}
}

// perturb applies hand edits to the CiliumNodes.
func (g *gen) perturb() {
	nodes := g.nodeNames()
	if len(nodes) == 0 {
		return
	}
	anyBlock := func() (string, netip.Prefix, bool) {
		for range 10 {
			n := g.nodes[g.pick(nodes)]
			if len(n.Spec.IPAM.Pools.Allocated) == 0 {
				continue
			}
			a := n.Spec.IPAM.Pools.Allocated[g.rng.IntN(len(n.Spec.IPAM.Pools.Allocated))]
			if len(a.CIDRs) > 0 {
				return a.Pool, a.CIDRs[g.rng.IntN(len(a.CIDRs))].Prefix, true
			}
		}
		return "", netip.Prefix{}, false
	}
	add := func(n *NodeObject, pool string, p netip.Prefix) {
		allocs := &n.Spec.IPAM.Pools.Allocated
		i := slices.IndexFunc(*allocs, func(a types.IPAMPoolAllocation) bool { return a.Pool == pool })
		if i < 0 {
			*allocs = append(*allocs, types.IPAMPoolAllocation{Pool: pool})
			i = len(*allocs) - 1
		}
		(*allocs)[i].CIDRs = append(slices.Clone((*allocs)[i].CIDRs), iputil.PrefixFrom(p))
	}
	if g.chance(0.15) { // a block on two nodes
		if pool, b, ok := anyBlock(); ok {
			add(g.nodes[g.pick(nodes)], pool, b)
		}
	}
	if g.chance(0.12) { // a block under a pool that does not exist
		add(g.nodes[g.pick(nodes)], "ghost", g.randPrefix(g.chance(0.3), 26))
	}
	pool := g.pick(g.poolNames())
	if pool == "" {
		return
	}
	p := g.pools[pool]
	if g.chance(0.12) { // a block outside the pool's CIDRs
		if f := p.Spec.IPv4; f != nil {
			add(g.nodes[g.pick(nodes)], pool, g.randPrefix(false, f.MaskSize))
		}
	}
	if g.chance(0.15) { // a block of the wrong size inside a CIDR (or larger than the CIDR)
		for _, v6 := range []bool{false, true} {
			f := p.family(v6)
			if f == nil {
				continue
			}
			c, err := netip.ParsePrefix(f.CIDRs[g.rng.IntN(len(f.CIDRs))])
			if err != nil {
				continue
			}
			c = c.Masked()
			bits := f.MaskSize + []int{-2, -1, 1, 2}[g.rng.IntN(4)]
			if g.chance(0.2) {
				bits = c.Bits() - 1
			}
			maxBits := c.Addr().BitLen()
			if bits < 1 || bits > maxBits {
				continue
			}
			start := c.Addr()
			if bits > c.Bits() {
				b := start.AsSlice()
				// a random aligned sub-block: set a random bit between c.Bits() and bits
				bit := c.Bits() + g.rng.IntN(bits-c.Bits())
				b[bit/8] |= 0x80 >> (bit % 8)
				start, _ = netip.AddrFromSlice(b)
			}
			add(g.nodes[g.pick(nodes)], pool, netip.PrefixFrom(start, bits).Masked())
			break
		}
	}
	if g.chance(0.15) { // one pool split over two allocated[] entries
		n := g.nodes[g.pick(nodes)]
		allocs := n.Spec.IPAM.Pools.Allocated
		for i, a := range allocs {
			if len(a.CIDRs) == 0 {
				continue
			}
			cut := g.rng.IntN(len(a.CIDRs) + 1)
			first := types.IPAMPoolAllocation{Pool: a.Pool, AllowFirstIP: a.AllowFirstIP, AllowLastIP: a.AllowLastIP, CIDRs: slices.Clone(a.CIDRs[:cut])}
			second := types.IPAMPoolAllocation{Pool: a.Pool, AllowFirstIP: a.AllowFirstIP, AllowLastIP: a.AllowLastIP, CIDRs: slices.Clone(a.CIDRs[cut:])}
			if g.chance(0.5) {
				first, second = second, first
			}
			n.Spec.IPAM.Pools.Allocated = slices.Concat(allocs[:i], []types.IPAMPoolAllocation{first, second}, allocs[i+1:])
			break
		}
	}
}

// reserve gives pools reserved ranges (written in cilium.io/v2's pool[] shape) for the emulated
// scenarios: single addresses, a few blocks, or a whole CIDR (draining).
func (g *gen) reserve() {
	for _, name := range g.poolNames() {
		p := g.pools[name]
		p.APIVersion = "cilium.io/v2"
		for _, v6 := range []bool{false, true} {
			f := p.family(v6)
			if f == nil {
				continue
			}
			for i, cs := range f.CIDRs {
				c, err := netip.ParsePrefix(cs)
				if err != nil || (i > 0 || name != g.poolNames()[0]) && !g.chance(0.6) {
					continue
				}
				c = c.Masked()
				e := PoolEntry{CIDR: cs}
				for range 1 + g.rng.IntN(2) {
					from, to := g.rangeIn(c, f.MaskSize)
					e.ReservedRanges = append(e.ReservedRanges, ReservedRange{Start: from.String(), End: to.String()})
				}
				f.Pool = append(f.Pool, e)
			}
		}
	}
}

func (g *gen) rangeIn(c netip.Prefix, mask int) (netip.Addr, netip.Addr) {
	last := lastAddr(c)
	if g.chance(0.1) {
		return c.Addr(), last
	}
	// an offset within the CIDR, expressed on the low 62 bits (CIDRs here are small enough)
	hostBits := c.Addr().BitLen() - c.Bits()
	span := uint64(1) << min(62, hostBits)
	off := g.rng.Uint64N(span)
	from := addOffset(c.Addr(), off)
	length := uint64(0)
	if !g.chance(0.3) {
		block := uint64(1) << min(62, max(0, c.Addr().BitLen()-mask))
		length = g.rng.Uint64N(max(1, block*uint64(1+g.rng.IntN(3))))
	}
	to := addOffset(from, length)
	if !c.Contains(to) || to.Less(from) {
		to = last
	}
	return from, to
}

func addOffset(a netip.Addr, off uint64) netip.Addr {
	b := a.AsSlice()
	carry := off
	for i := len(b) - 1; i >= 0 && carry > 0; i-- {
		sum := uint64(b[i]) + carry&0xff
		b[i] = byte(sum)
		carry = carry>>8 + sum>>8
	}
	r, _ := netip.AddrFromSlice(b)
	return r
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for bit := p.Bits(); bit < len(b)*8; bit++ {
		b[bit/8] |= 0x80 >> (bit % 8)
	}
	r, _ := netip.AddrFromSlice(b)
	return r
}
