//! The bundle parser (`partita_core::bundle`), which the hypervisor runs on the blob appended
//! to its image: any bytes either fail with a `BundleError` or give a configuration whose
//! images lie inside the blob with their configured sizes, and that encodes back to a bundle
//! that parses to the same thing. Core's validation of what came out never panics.

#![no_main]

use libfuzzer_sys::fuzz_target;
use partita_core::bundle::{encode, total_len, Bundle, VmImages};
use partita_core::config::validate;

fn check(blob: &[u8]) {
    let Ok(bundle) = Bundle::parse(blob) else {
        return;
    };
    let total = total_len(blob).expect("a parsed bundle has a header");
    assert!(total <= blob.len());
    let config = &bundle.config;
    let mut images: Vec<VmImages> = Vec::new();
    for (i, vm) in config.vms.iter().enumerate() {
        let files = bundle.images(i).expect("every VM has its images");
        assert_eq!(files.image.len() as u64, vm.image.size);
        assert_eq!(
            files.initrd.map(|b| b.len() as u64),
            vm.initrd.as_ref().map(|i| i.size)
        );
        images.push(files);
    }
    assert!(bundle.images(config.vms.len()).is_none());
    let _ = validate(config);
    let again = encode(config, &images);
    let reparsed = Bundle::parse(&again).expect("a re-encoded bundle parses");
    assert_eq!(&reparsed.config, config);
    for (i, files) in images.iter().enumerate() {
        assert_eq!(reparsed.images(i), Some(*files));
    }
}

fuzz_target!(|data: &[u8]| check(data));
