//! `ip ADDR...`: where each address stands (calicoctl's `ipam show --ip`, for Cilium).

use crate::allocator::ip::{IpAnswer, lookup};
use crate::cli::IpArgs;
use crate::commands::context::Context;
use crate::commands::steps::analyze;
use crate::error::input;
use crate::model::{Addr, Prefix};
use crate::render::ip::Ip;
use anyhow::Result;

pub async fn run(args: IpArgs, ctx: &Context) -> Result<i32> {
    // Every argument is validated before anything is read.
    let addresses = parse(&args.addresses)?;
    let (snapshot, report) = analyze(ctx).await?;
    let answers: Vec<IpAnswer> = addresses.into_iter().map(|a| lookup(&snapshot, &report, a)).collect();
    ctx.show(&Ip { origin: &snapshot.origin, mode: &report.ipam.mode, answers: &answers })?;
    Ok(if answers.iter().any(IpAnswer::in_no_pool) { 1 } else { 0 })
}

/// The addresses asked about (`A`, or `A/32` / `A/128`); the first that is not one is refused (exit 2).
pub fn parse(addresses: &[String]) -> Result<Vec<Addr>> {
    let parse = |text: &String| {
        let single = match text.split_once('/') {
            Some(_) => Prefix::parse_typed(text).ok().filter(|p| p.host_bits() == 0).map(|p| Addr { family: p.family, value: p.network }),
            None => Addr::parse(text),
        };
        single.ok_or_else(|| {
            input(format!(
                "\"{}\" is not an IP address; pass IPv4 or IPv6 addresses such as 10.40.3.17, 10.40.3.17/32 or fd00:10::1a (for a CIDR, use inspect)",
                text
            ))
        })
    };
    addresses.iter().map(parse).collect()
}
