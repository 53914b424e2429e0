//! Xen's dom0less boot description: the `/chosen/domU*` nodes (Xen's
//! docs/misc/arm/device-tree/booting.txt, "Dom0less") that QEMU's `guest-loader` cannot
//! write. It copies the host device tree QEMU dumped (`-machine dumpdtb=`), node by node
//! with the `fdt` reader and the `vm-fdt` writer the project already uses, and adds one
//! node per domU under `/chosen`. It only transforms bytes: dumping the tree and loading
//! the images is the QEMU command's business.

use anyhow::{anyhow, bail, Context, Result};
use fdt::node::FdtNode;
use fdt::Fdt;
use vm_fdt::{FdtReserveEntry, FdtWriter};

/// One dom0less guest: its kernel (already in host RAM at `kernel` for `kernel_size`
/// bytes), the command line Xen puts in its own `/chosen/bootargs`, its RAM and vCPUs.
/// Its console is always Xen's emulated SBSA UART (`vpl011`), which Xen's serial console
/// shows as `(d<id>)` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomU {
    /// The node's name under `/chosen` (`domU1`).
    pub name: String,
    pub kernel: u64,
    pub kernel_size: u64,
    pub bootargs: String,
    pub memory_kib: u64,
    pub vcpus: u32,
}

/// `host` (a flattened device tree) with a `/chosen/<name>` node of compatible
/// `xen,domain` for every entry of `domus`.
pub fn with_domus(host: &[u8], domus: &[DomU]) -> Result<Vec<u8>> {
    let tree = Fdt::new(host).map_err(|e| anyhow!("host device tree: {e:?}"))?;
    if tree.find_node("/chosen").is_none() {
        bail!("host device tree has no /chosen node");
    }
    let reservations = tree
        .memory_reservations()
        .map(|r| FdtReserveEntry::new(r.address() as u64, r.size() as u64))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("host device tree reservations: {e}"))?;
    let mut out = FdtWriter::new_with_mem_reserv(&reservations).map_err(writer)?;
    let root = tree
        .find_node("/")
        .context("host device tree has no root node")?;
    copy(&mut out, root, "", domus)?;
    out.finish().map_err(writer)
}

fn writer(error: vm_fdt::Error) -> anyhow::Error {
    anyhow!("writing the dom0less device tree: {error}")
}

/// Writes `node` (named `name`) and its subtree; `/chosen` gains the domU nodes.
fn copy(out: &mut FdtWriter, node: FdtNode<'_, '_>, name: &str, domus: &[DomU]) -> Result<()> {
    let handle = out.begin_node(name).map_err(writer)?;
    for property in node.properties() {
        out.property(property.name, property.value)
            .map_err(writer)?;
    }
    for child in node.children() {
        copy(out, child, child.name, domus)?;
    }
    if name == "chosen" {
        for domu in domus {
            domu_node(out, domu)?;
        }
    }
    out.end_node(handle).map_err(writer)
}

/// One `xen,domain` node: 64-bit cells, so any address and size fits.
fn domu_node(out: &mut FdtWriter, domu: &DomU) -> Result<()> {
    let node = out.begin_node(&domu.name).map_err(writer)?;
    out.property_string("compatible", "xen,domain")
        .map_err(writer)?;
    out.property_u32("#address-cells", 2).map_err(writer)?;
    out.property_u32("#size-cells", 2).map_err(writer)?;
    out.property_u64("memory", domu.memory_kib)
        .map_err(writer)?;
    out.property_u32("cpus", domu.vcpus).map_err(writer)?;
    out.property_null("vpl011").map_err(writer)?;
    let module = out
        .begin_node(&format!("module@{:x}", domu.kernel))
        .map_err(writer)?;
    out.property_string_list(
        "compatible",
        vec!["multiboot,kernel".to_owned(), "multiboot,module".to_owned()],
    )
    .map_err(writer)?;
    out.property_array_u64("reg", &[domu.kernel, domu.kernel_size])
        .map_err(writer)?;
    out.property_string("bootargs", &domu.bootargs)
        .map_err(writer)?;
    out.end_node(module).map_err(writer)?;
    out.end_node(node).map_err(writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small host tree with a reservation, a phandle, nested nodes and a /chosen.
    fn host() -> Vec<u8> {
        let mut w =
            FdtWriter::new_with_mem_reserv(&[FdtReserveEntry::new(0x1000, 0x2000).unwrap()])
                .unwrap();
        let root = w.begin_node("").unwrap();
        w.property_u32("#address-cells", 2).unwrap();
        w.property_string("compatible", "linux,dummy-virt").unwrap();
        let intc = w.begin_node("intc@8000000").unwrap();
        w.property_phandle(0x8001).unwrap();
        w.property_array_u64("reg", &[0x800_0000, 0x1_0000])
            .unwrap();
        w.end_node(intc).unwrap();
        let chosen = w.begin_node("chosen").unwrap();
        w.property_string("bootargs", "dom0_mem=2G").unwrap();
        let module = w.begin_node("module@49000000").unwrap();
        w.property_string("compatible", "multiboot,kernel").unwrap();
        w.end_node(module).unwrap();
        w.end_node(chosen).unwrap();
        w.end_node(root).unwrap();
        w.finish().unwrap()
    }

    fn freertos() -> DomU {
        DomU {
            name: "domU1".to_owned(),
            kernel: 0x4d00_0000,
            kernel_size: 0x1_2345,
            bootargs: "bench=all bench.mode=quick".to_owned(),
            memory_kib: 4096,
            vcpus: 1,
        }
    }

    #[test]
    fn the_host_tree_is_kept_and_chosen_gains_the_domu() {
        let bytes = with_domus(&host(), &[freertos()]).unwrap();
        let tree = Fdt::new(&bytes).unwrap();
        let reservation = tree.memory_reservations().next().unwrap();
        assert_eq!(
            (reservation.address() as u64, reservation.size()),
            (0x1000, 0x2000)
        );
        let intc = tree.find_node("/intc@8000000").unwrap();
        assert_eq!(intc.property("phandle").unwrap().as_usize(), Some(0x8001));
        assert_eq!(
            tree.find_node("/chosen")
                .unwrap()
                .property("bootargs")
                .unwrap()
                .as_str(),
            Some("dom0_mem=2G")
        );
        assert!(tree.find_node("/chosen/module@49000000").is_some());
        let domu = tree.find_node("/chosen/domU1").unwrap();
        assert_eq!(
            domu.property("compatible").unwrap().as_str(),
            Some("xen,domain")
        );
        assert_eq!(
            domu.property("memory").unwrap().value,
            4096u64.to_be_bytes()
        );
        assert_eq!(domu.property("cpus").unwrap().as_usize(), Some(1));
        assert!(domu.property("vpl011").unwrap().value.is_empty());
        let kernel = tree.find_node("/chosen/domU1/module@4d000000").unwrap();
        assert_eq!(
            kernel.compatible().unwrap().all().collect::<Vec<_>>(),
            ["multiboot,kernel", "multiboot,module"]
        );
        let reg: Vec<u8> = [0x4d00_0000u64, 0x1_2345]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        assert_eq!(kernel.property("reg").unwrap().value, reg);
        assert_eq!(
            kernel.property("bootargs").unwrap().as_str(),
            Some("bench=all bench.mode=quick")
        );
    }

    #[test]
    fn a_tree_without_chosen_or_a_broken_blob_is_refused() {
        let mut w = FdtWriter::new().unwrap();
        let root = w.begin_node("").unwrap();
        w.end_node(root).unwrap();
        let bare = w.finish().unwrap();
        let error = with_domus(&bare, &[freertos()]).unwrap_err();
        assert_eq!(error.to_string(), "host device tree has no /chosen node");
        let error = with_domus(b"not a device tree", &[freertos()]).unwrap_err();
        assert!(
            error.to_string().starts_with("host device tree: "),
            "{error}"
        );
    }

    #[test]
    fn bootargs_with_a_nul_are_refused() {
        let mut domu = freertos();
        domu.bootargs = "a\0b".to_owned();
        let error = with_domus(&host(), &[domu]).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("writing the dom0less device tree"),
            "{error}"
        );
    }
}
