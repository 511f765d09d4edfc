use super::*;
use proptest::prelude::*;

fn traj() -> Trajectory {
    let mut t = Trajectory::new(Some(1000)).unwrap();
    t.add_prompt(&[1, 2, 3]).unwrap();
    t.add_completion(&[4, 5], &[-0.5, -0.25], Some("stop")).unwrap();
    t
}

#[test]
fn prompt_and_completion_layout() {
    let t = traj();
    assert_eq!(t.tokens(), &[1, 2, 3, 4, 5]);
    assert_eq!(t.masks(), &[MASK, MASK, MASK, 4, 5]);
    assert_eq!(t.logprobs(), &[1.0, 1.0, 1.0, -0.5, -0.25]);
    assert_eq!(t.num_trained(), 2);
    assert_eq!(t.last_finish_reason(), Some("stop"));
    assert_eq!(t.segments().len(), 2);
}

#[test]
fn bad_input_changes_nothing() {
    let mut t = traj();
    let before = t.clone();
    let e = t.add_completion(&[6, 7], &[-1.0], None).unwrap_err();
    assert_eq!(e, TrajectoryError::LengthMismatch { ids: 2, logprobs: 1 });
    assert_eq!(e.index(), Some(1));
    let e = t.add_completion(&[6, -7], &[-1.0, -1.0], None).unwrap_err();
    assert_eq!(e, TrajectoryError::NegativeId { index: 1, id: -7 });
    let e = t.add_prompt(&[6, 7, 1000]).unwrap_err();
    assert_eq!(
        e,
        TrajectoryError::IdOutOfVocab {
            index: 2,
            id: 1000,
            vocab_size: 1000
        }
    );
    assert!(e.to_string().contains("index 2"));
    let e = t.add_completion(&[6, 7], &[-1.0, f64::NAN], None).unwrap_err();
    assert_eq!(e.index(), Some(1));
    let e = t.extend(&[9, 9, 9], DivergencePolicy::Raise, None).unwrap_err();
    assert_eq!(e.index(), Some(0));
    assert!(e.to_string().contains("index 0"), "{e}");
    assert_eq!(t, before);
}

#[test]
fn impossible_input_is_refused_before_any_change() {
    assert_eq!(Trajectory::new(Some(0)).unwrap_err(), TrajectoryError::ZeroVocab);
    let mut empty = Trajectory::new(Some(1000)).unwrap();
    assert_eq!(
        empty.add_completion(&[4], &[-0.5], Some("stop")).unwrap_err(),
        TrajectoryError::CompletionWithoutPrompt
    );
    assert!(empty.is_empty());
    let mut t = traj();
    let before = t.clone();
    type Case<'a> = (&'a [i64], &'a [f64], Option<&'a str>, TrajectoryError);
    let cases: [Case; 6] = [
        (
            &[6],
            &[5.0],
            None,
            TrajectoryError::PositiveLogprob { index: 0, value: 5.0 },
        ),
        (
            &[6, 7],
            &[-1.0, 1e-9],
            None,
            TrajectoryError::PositiveLogprob { index: 1, value: 1e-9 },
        ),
        (
            &[6],
            &[f64::NEG_INFINITY],
            None,
            TrajectoryError::NonFiniteLogprob {
                index: 0,
                value: f64::NEG_INFINITY,
            },
        ),
        (&[], &[], None, TrajectoryError::EmptyCompletion),
        (
            &[6],
            &[-1.0],
            Some("banana"),
            TrajectoryError::UnknownFinishReason("banana".into()),
        ),
        (
            &[6],
            &[-1.0],
            Some(""),
            TrajectoryError::UnknownFinishReason(String::new()),
        ),
    ];
    for (ids, lps, finish, want) in cases {
        let got = t.add_completion(ids, lps, finish).unwrap_err();
        assert_eq!(got, want);
        assert!(!got.to_string().is_empty());
        assert_eq!(t, before);
    }
    for reason in FINISH_REASONS {
        t.fork().add_completion(&[6], &[0.0], Some(reason)).unwrap();
    }
    let msg = t.add_completion(&[6], &[5.0], None).unwrap_err().to_string();
    assert!(msg.contains("index 0 is 5.0") && msg.contains("<= 0"), "{msg}");
}

#[test]
fn from_parts_refuses_what_the_api_refuses() {
    let t = traj();
    let seg = t.segments().to_vec();
    let mut lp = t.logprobs().to_vec();
    lp[4] = 0.5;
    assert!(Trajectory::from_parts(t.tokens().to_vec(), t.masks().to_vec(), lp, seg.clone(), None).is_err());
    assert_eq!(
        Trajectory::from_parts(
            t.tokens().to_vec(),
            t.masks().to_vec(),
            t.logprobs().to_vec(),
            seg.clone(),
            Some(0)
        )
        .unwrap_err(),
        TrajectoryError::ZeroVocab
    );
    let mut bad_finish = seg.clone();
    bad_finish[1].finish_reason = Some("banana".into());
    assert!(Trajectory::from_parts(
        t.tokens().to_vec(),
        t.masks().to_vec(),
        t.logprobs().to_vec(),
        bad_finish,
        None
    )
    .is_err());
    // A sequence that is all completion (no prompt) is not a trajectory.
    let only = vec![Segment {
        kind: SegmentKind::Completion,
        start: 0,
        end: 2,
        finish_reason: None,
    }];
    assert_eq!(
        Trajectory::from_parts(vec![4, 5], vec![4, 5], vec![-0.1, -0.2], only, None).unwrap_err(),
        TrajectoryError::CompletionWithoutPrompt
    );
}

#[test]
fn mask_refuses_ids_that_are_not_tokens() {
    let offsets = [(0, 1), (1, 2)];
    let e = assistant_token_mask(&[3, -7], &offsets, &[(0, 2)], None).unwrap_err();
    assert_eq!(e, MaskError::BadId(TrajectoryError::NegativeId { index: 1, id: -7 }));
    assert_eq!(e.index(), 1);
    let e = assistant_token_mask(&[3, 10], &offsets, &[(0, 2)], Some(10)).unwrap_err();
    assert_eq!(e.index(), 1);
    assert!(e.to_string().contains("outside the vocabulary"), "{e}");
    assert_eq!(
        assistant_token_mask(&[3, 9], &offsets, &[(0, 2)], Some(0)).unwrap_err(),
        MaskError::BadId(TrajectoryError::ZeroVocab)
    );
    assert_eq!(
        assistant_token_mask(&[3, 9], &offsets, &[(1, 2)], Some(10)).unwrap(),
        vec![MASK, 9]
    );
}

#[test]
fn extension_keeps_masks() {
    let mut t = traj();
    let out = t.extend(&[1, 2, 3, 4, 5, 6, 7], DivergencePolicy::Raise, None).unwrap();
    assert_eq!(out, Extension::Extended { appended: 2 });
    assert_eq!(t.masks(), &[MASK, MASK, MASK, 4, 5, MASK, MASK]);
    assert_eq!(t.logprobs()[3..5], [-0.5, -0.25]);
}

#[test]
fn divergence_policies() {
    let next = [1, 2, 3, 4, 99, 6];
    let mut t = traj();
    let Err(TrajectoryError::Divergence(d)) = t.extend(&next, DivergencePolicy::Raise, None) else {
        panic!("expected divergence")
    };
    assert_eq!(d.index, 4);
    assert_eq!(d.ours, vec![1, 2, 3, 4, 5]);
    assert_eq!(d.theirs, vec![1, 2, 3, 4, 99, 6]);

    let mut t = traj();
    let Ok(Extension::Restarted { divergence, previous }) = t.extend(&next, DivergencePolicy::WarnAndRestart, None)
    else {
        panic!("expected restart")
    };
    assert_eq!(divergence.index, 4);
    assert_eq!(*previous, traj());
    assert_eq!(t.tokens(), &next);
    assert_eq!(t.num_trained(), 0);

    let mut t = traj();
    assert!(matches!(
        t.extend(&next, DivergencePolicy::KeepRaw, None),
        Err(TrajectoryError::KeepRawNeedsNewTurn(_))
    ));
    assert_eq!(t, traj());
    let out = t.extend(&next, DivergencePolicy::KeepRaw, Some(&[6])).unwrap();
    assert!(matches!(out, Extension::KeptRaw { appended: 1, .. }));
    assert_eq!(t.tokens(), &[1, 2, 3, 4, 5, 6]);
    assert_eq!(t.masks(), &[MASK, MASK, MASK, 4, 5, MASK]);
}

#[test]
fn shorter_prompt_is_a_divergence() {
    let t = traj();
    let d = t.divergence(&[1, 2]).unwrap();
    assert_eq!(d.index, 2);
    assert!(d.to_string().contains("ends inside"));
    assert!(t.divergence(&[1, 2, 3, 4, 5]).is_none());
}

#[test]
fn policy_names() {
    for p in [
        DivergencePolicy::Raise,
        DivergencePolicy::WarnAndRestart,
        DivergencePolicy::KeepRaw,
    ] {
        assert_eq!(DivergencePolicy::parse(p.name()).unwrap(), p);
    }
    assert!(DivergencePolicy::parse("ignore").is_err());
}

#[test]
fn from_parts_round_trip_and_checks() {
    let t = traj();
    let parts = || {
        (
            t.tokens().to_vec(),
            t.masks().to_vec(),
            t.logprobs().to_vec(),
            t.segments().to_vec(),
        )
    };
    let (tok, m, lp, seg) = parts();
    assert_eq!(Trajectory::from_parts(tok, m, lp, seg, Some(1000)).unwrap(), t);
    let (tok, mut m, lp, seg) = parts();
    m[0] = 1;
    assert_eq!(
        Trajectory::from_parts(tok, m, lp, seg, Some(1000)).unwrap_err().index(),
        Some(0)
    );
    let (tok, m, lp, mut seg) = parts();
    seg.pop();
    assert!(Trajectory::from_parts(tok, m, lp, seg, Some(1000)).is_err());
    let (tok, m, mut lp, seg) = parts();
    lp.pop();
    assert!(Trajectory::from_parts(tok, m, lp, seg, None).is_err());
}

#[test]
fn fork_is_independent() {
    let t = traj();
    let mut f = t.fork();
    f.add_prompt(&[7]).unwrap();
    assert_eq!(t.len(), 5);
    assert_eq!(f.len(), 6);
}

#[test]
fn mask_boundary_rule() {
    // text: "ab|cd|ef" tokens of width 2; span covers chars 3..5 ("d" + "e").
    let ids = [10, 11, 12];
    let offsets = [(0, 2), (2, 4), (4, 6)];
    assert_eq!(
        assistant_token_mask(&ids, &offsets, &[(3, 5)], None).unwrap(),
        vec![MASK, 11, 12]
    );
    assert_eq!(
        assistant_token_mask(&ids, &offsets, &[(2, 4)], None).unwrap(),
        vec![MASK, 11, MASK]
    );
    assert_eq!(
        assistant_token_mask(&ids, &offsets, &[(0, 0), (6, 6)], None).unwrap(),
        vec![MASK; 3]
    );
    // zero-width token at 2 lies inside [2, 4)
    assert_eq!(
        assistant_token_mask(&[1, 2], &[(2, 2), (4, 6)], &[(2, 4)], None).unwrap(),
        vec![1, MASK]
    );
}

#[test]
fn mask_errors_name_the_index() {
    let e = assistant_token_mask(&[1, 2], &[(0, 1)], &[], None).unwrap_err();
    assert_eq!(e.index(), 1);
    let e = assistant_token_mask(&[1, 2], &[(0, 1), (2, 1)], &[], None).unwrap_err();
    assert_eq!(
        e,
        MaskError::BadOffset {
            index: 1,
            start: 2,
            end: 1
        }
    );
    let e = assistant_token_mask(&[1, 2], &[(3, 4), (2, 3)], &[], None).unwrap_err();
    assert_eq!(e.index(), 1);
    let e = assistant_token_mask(&[1], &[(0, 1)], &[(0, 5), (4, 6)], None).unwrap_err();
    assert_eq!(
        e,
        MaskError::OverlappingSpans {
            index: 1,
            start: 4,
            previous_end: 5
        }
    );
}

/// Reference: a token is trained iff some span shares a character with it.
fn naive_mask(ids: &[i64], offsets: &[(usize, usize)], spans: &[(usize, usize)]) -> Vec<i64> {
    ids.iter()
        .zip(offsets)
        .map(|(&id, &(s, e))| {
            let hit = spans
                .iter()
                .any(|&(a, b)| a < b && if s == e { a <= s && s < b } else { a < e && s < b });
            if hit {
                id
            } else {
                MASK
            }
        })
        .collect()
}

proptest! {
    #[test]
    fn segments_keep_arrays_aligned(segs in proptest::collection::vec(
        (any::<bool>(), proptest::collection::vec(0i64..500, 0..20)), 0..20)
    ) {
        let mut t = Trajectory::new(Some(500)).unwrap();
        t.add_prompt(&[1]).unwrap();
        let mut expect_mask = vec![MASK];
        for (completion, ids) in &segs {
            if *completion && !ids.is_empty() {
                let lps: Vec<f64> = ids.iter().map(|&i| -(i as f64) / 100.0).collect();
                t.add_completion(ids, &lps, Some("stop")).unwrap();
                expect_mask.extend_from_slice(ids);
            } else {
                t.add_prompt(ids).unwrap();
                expect_mask.extend(std::iter::repeat_n(MASK, ids.len()));
            }
        }
        prop_assert_eq!(t.tokens().len(), t.masks().len());
        prop_assert_eq!(t.tokens().len(), t.logprobs().len());
        prop_assert_eq!(t.masks(), &expect_mask[..]);
        for (m, lp) in t.masks().iter().zip(t.logprobs()) {
            if *m == MASK { prop_assert_eq!(*lp, 1.0); }
        }
        let toks = t.tokens().to_vec();
        prop_assert_eq!(t.common_prefix(&toks), toks.len());
    }

    #[test]
    fn mask_matches_reference(
        widths in proptest::collection::vec(0usize..4, 0..60),
        cuts in proptest::collection::vec(0usize..200, 0..12),
    ) {
        let mut offsets = Vec::new();
        let mut pos = 0;
        for w in &widths { offsets.push((pos, pos + w)); pos += w; }
        let ids: Vec<i64> = (0..offsets.len() as i64).collect();
        let mut cuts = cuts;
        cuts.sort_unstable();
        let spans: Vec<(usize, usize)> = cuts.chunks_exact(2).map(|c| (c[0], c[1])).collect();
        prop_assert_eq!(assistant_token_mask(&ids, &offsets, &spans, None).unwrap(), naive_mask(&ids, &offsets, &spans));
    }
}

#[test]
fn add_turn_is_prompt_then_completion_or_nothing() {
    let mut a = traj();
    let mut b = traj();
    a.add_turn(&[6, 7], &[8, 9], &[-0.1, -0.2], Some("stop")).unwrap();
    b.add_prompt(&[6, 7]).unwrap();
    b.add_completion(&[8, 9], &[-0.1, -0.2], Some("stop")).unwrap();
    assert_eq!(a, b);
    // An empty prompt adds no segment, as add_prompt(&[]) does not.
    let mut c = traj();
    c.add_turn(&[], &[8], &[-0.1], None).unwrap();
    assert_eq!(c.segments().len(), 3);
    // A bad completion after a good prompt leaves the trajectory as it was.
    let before = a.clone();
    let e = a.add_turn(&[1, 2], &[3], &[-0.1, -0.2], None).unwrap_err();
    assert_eq!(e, TrajectoryError::LengthMismatch { ids: 1, logprobs: 2 });
    assert_eq!(a, before);
    let e = a.add_turn(&[1, 2000], &[3], &[-0.1], None).unwrap_err();
    assert_eq!(e.index(), Some(1));
    assert_eq!(a, before);
}

#[test]
fn fork_prefix_is_the_trajectory_as_it_was() {
    let before = traj();
    let mut t = before.clone();
    t.add_turn(&[6], &[7, 8], &[-0.5, -0.5], Some("length")).unwrap();
    assert_eq!(t.fork_prefix(before.len()).unwrap(), before);
    assert_eq!(t.fork_prefix(t.len()).unwrap(), t);
    assert_eq!(t.fork_prefix(0).unwrap(), Trajectory::new(Some(1000)).unwrap());
    let e = t.fork_prefix(4).unwrap_err();
    assert_eq!(e, TrajectoryError::NotASegmentEnd { len: 4, total: 8 });
    assert!(e.to_string().contains("not where an earlier add call ended"), "{e}");
    assert!(t.fork_prefix(99).is_err());
}

#[test]
fn ends_with_looks_at_the_tail_only() {
    let t = traj();
    assert!(t.ends_with(&[]));
    assert!(t.ends_with(&[4, 5]));
    assert!(t.ends_with(&[1, 2, 3, 4, 5]));
    assert!(!t.ends_with(&[3, 5]));
    assert!(!t.ends_with(&[0, 1, 2, 3, 4, 5]));
}
