//! Where a vCPU stands in a CPU's list, found by its `VcpuId` in constant time: a small
//! open-addressed table (a vCPU's home bucket is `vm * 8 + vcpu` modulo its size, probing
//! onwards on a collision). With at most `MAX_VCPUS` ids in four times as many buckets a
//! lookup ends at an empty bucket within a few probes, and the ids the hypervisor uses (VM
//! and vCPU indices below 8) never collide. The run queue and the hypervisor's scheduler
//! rebuild theirs when their lists change (rare); lookups happen on every scheduling event,
//! so their cost must not grow with the number of vCPUs. Plain data; never panics.

use super::{VcpuId, MAX_VCPUS};

const BUCKETS: usize = 4 * MAX_VCPUS;
const EMPTY: u8 = u8::MAX;

#[derive(Clone, Copy, Debug)]
struct Bucket {
    id: VcpuId,
    at: u8,
}

const FREE: Bucket = Bucket {
    id: VcpuId::new(0, 0),
    at: EMPTY,
};

/// `VcpuId` → position, for at most `MAX_VCPUS` ids.
#[derive(Clone, Debug)]
pub struct IdIndex {
    buckets: [Bucket; BUCKETS],
    /// Ids recorded.
    len: usize,
}

impl Default for IdIndex {
    fn default() -> Self {
        IdIndex {
            buckets: [FREE; BUCKETS],
            len: 0,
        }
    }
}

fn home(id: VcpuId) -> usize {
    (usize::from(id.vm) * 8 + usize::from(id.vcpu)) % BUCKETS
}

impl IdIndex {
    /// Forgets every id.
    pub fn clear(&mut self) {
        self.buckets.fill(FREE);
        self.len = 0;
    }

    /// Records `id` at position `at`. False (nothing recorded) when `at` is not below
    /// `MAX_VCPUS` or `MAX_VCPUS` other ids are recorded already.
    pub fn insert(&mut self, id: VcpuId, at: usize) -> bool {
        let Some(at) = u8::try_from(at)
            .ok()
            .filter(|&a| usize::from(a) < MAX_VCPUS)
        else {
            return false;
        };
        let mut bucket = home(id);
        loop {
            let b = &mut self.buckets[bucket];
            if b.at != EMPTY && b.id == id {
                b.at = at;
                return true;
            }
            if b.at == EMPTY {
                if self.len == MAX_VCPUS {
                    return false;
                }
                *b = Bucket { id, at };
                self.len += 1;
                return true;
            }
            bucket = (bucket + 1) % BUCKETS;
        }
    }

    /// The position recorded for `id`, if any.
    #[inline]
    pub fn get(&self, id: VcpuId) -> Option<usize> {
        let mut bucket = home(id);
        // At most MAX_VCPUS buckets are used, so an empty one comes within that many probes.
        for _ in 0..=MAX_VCPUS {
            let b = self.buckets[bucket];
            if b.at == EMPTY {
                return None;
            }
            if b.id == id {
                return Some(usize::from(b.at));
            }
            bucket = (bucket + 1) % BUCKETS;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_where_they_were_recorded_even_when_they_collide() {
        let mut index = IdIndex::default();
        // vm 1 vcpu 0 and vm 0 vcpu 8 share a home bucket; so do the wrapped ones.
        let ids = [
            VcpuId::new(1, 0),
            VcpuId::new(0, 8),
            VcpuId::new(8, 0),
            VcpuId::new(0, 63),
            VcpuId::new(7, 7),
        ];
        for (at, &id) in ids.iter().enumerate() {
            assert!(index.insert(id, at));
        }
        for (at, &id) in ids.iter().enumerate() {
            assert_eq!(index.get(id), Some(at), "{id:?}");
        }
        assert_eq!(index.get(VcpuId::new(2, 0)), None);
        assert!(index.insert(VcpuId::new(0, 8), 9), "a known id moves");
        assert_eq!(index.get(VcpuId::new(0, 8)), Some(9));
        index.clear();
        assert_eq!(index.get(VcpuId::new(1, 0)), None);
    }

    #[test]
    fn it_holds_max_vcpus_ids_and_refuses_more_or_bad_positions() {
        let mut index = IdIndex::default();
        for n in 0..MAX_VCPUS {
            assert!(index.insert(VcpuId::new(0, n as u16 * 16), n));
        }
        assert!(!index.insert(VcpuId::new(5, 5), 0), "full");
        assert!(!IdIndex::default().insert(VcpuId::new(0, 0), MAX_VCPUS));
        for n in 0..MAX_VCPUS {
            assert_eq!(index.get(VcpuId::new(0, n as u16 * 16)), Some(n));
        }
        assert_eq!(index.get(VcpuId::new(u16::MAX, u16::MAX)), None);
    }
}
