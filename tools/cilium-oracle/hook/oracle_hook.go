// Added to Cilium's multipool package in the oracle's build tree by tools/cilium-oracle/build.sh.
// This file is ours, not Cilium's: it gives the oracle the one thing the package does not export.

package multipool

import (
	"errors"
	"fmt"
	"net/netip"

	"go4.org/netipx"
)

// OracleOccupyRange emulates a reserved range [from, to] of the pool's CIDR `cidr`: it occupies,
// in that CIDR's own cidrset, every block the range touches (cidrset aligns each prefix of the
// range to block boundaries). Cilium v1.20.2 has no reserved ranges; a release that has them
// replaces this with its own API.
func (p *PoolAllocator) OracleOccupyRange(pool string, cidr netip.Prefix, from, to netip.Addr) error {
	p.mutex.Lock()
	defer p.mutex.Unlock()
	c, ok := p.pools[pool]
	if !ok {
		return fmt.Errorf("pool %q is not in the allocator", pool)
	}
	allocators := c.v4
	if cidr.Addr().Is6() {
		allocators = c.v6
	}
	for _, a := range allocators {
		if a.Prefix() != cidr.Masked() {
			continue
		}
		var errs []error
		for _, part := range netipx.IPRangeFrom(from, to).Prefixes() {
			errs = append(errs, a.Occupy(part))
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("pool %q has no CIDR %s", pool, cidr)
}
