use crate::vgic::{ListRegister, LrLink, LrState};

#[test]
fn encodes_every_field_at_its_architected_position() {
    let lr = ListRegister {
        vintid: 33,
        state: LrState::Pending,
        priority: 0xa0,
        group1: true,
        link: LrLink::Virtual {
            eoi_maintenance: false,
        },
    };
    assert_eq!(lr.encode(), (1 << 62) | (1 << 60) | (0xa0 << 48) | 33);
    let hw = ListRegister {
        vintid: 27,
        state: LrState::Active,
        priority: 0,
        group1: false,
        link: LrLink::Hardware { pintid: 0x1abc },
    };
    assert_eq!(hw.encode(), (2 << 62) | (1 << 61) | (0x1abc << 32) | 27);
    let eoi = ListRegister {
        state: LrState::PendingActive,
        link: LrLink::Virtual {
            eoi_maintenance: true,
        },
        ..lr
    };
    assert_eq!(
        eoi.encode(),
        (3 << 62) | (1 << 60) | (1 << 41) | (0xa0 << 48) | 33
    );
}

#[test]
fn decode_inverts_encode() {
    let states = [
        LrState::Invalid,
        LrState::Pending,
        LrState::Active,
        LrState::PendingActive,
    ];
    let links = [
        LrLink::Virtual {
            eoi_maintenance: false,
        },
        LrLink::Virtual {
            eoi_maintenance: true,
        },
        LrLink::Hardware { pintid: 0 },
        LrLink::Hardware { pintid: 0x1fff },
    ];
    for state in states {
        for link in links {
            for group1 in [false, true] {
                let lr = ListRegister {
                    vintid: 1019,
                    state,
                    priority: 0x5a,
                    group1,
                    link,
                };
                assert_eq!(ListRegister::decode(lr.encode()), lr);
            }
        }
    }
}

#[test]
fn any_value_decodes_and_free_follows_elrsr() {
    for raw in [
        0,
        u64::MAX,
        0x5555_5555_5555_5555,
        0xaaaa_aaaa_aaaa_aaaa,
        1 << 41,
    ] {
        let lr = ListRegister::decode(raw);
        assert_eq!(ListRegister::decode(lr.encode()), lr);
    }
    assert!(ListRegister::decode(0).is_free());
    assert!(
        !ListRegister::decode(1 << 41).is_free(),
        "EOI maintenance still due"
    );
    assert!(
        ListRegister::decode((1 << 61) | (1 << 41)).is_free(),
        "HW: bit 41 is pINTID"
    );
    assert!(!ListRegister::decode(1 << 62).is_free());
    assert_eq!(ListRegister::EMPTY.encode(), 0);
}

#[test]
fn state_flags() {
    assert_eq!(LrState::from_flags(true, true), LrState::PendingActive);
    assert!(LrState::PendingActive.is_pending() && LrState::PendingActive.is_active());
    assert!(!LrState::Invalid.is_pending() && !LrState::Invalid.is_active());
}
