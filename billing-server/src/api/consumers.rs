//! Consumers.

use super::{path_id, Input, ListBody, Op, Reply};
use crate::router::Route;
use billing_core::consumer::{parse_consumer_list, ConsumerFields};

pub fn build(route: Route, input: Input) -> Op {
    match route {
        Route::CreateConsumer => Box::new(move |b, s| {
            let f = ConsumerFields::parse(&input.body?, true)?;
            Ok(Reply::of(&b.create_consumer(s, f)?.response(&s.branch)))
        }),
        Route::ListConsumers => Box::new(move |b, s| {
            let (q, f) = parse_consumer_list(&input.query)?;
            let page = b.list_consumers(s, &q, &f)?;
            let data: Vec<_> = page.items.iter().map(|c| c.response(&s.branch)).collect();
            Ok(Reply::of(&ListBody {
                data,
                pagination: page.pagination(),
            }))
        }),
        Route::GetConsumer(id) => Box::new(move |b, s| Ok(Reply::of(&b.get_consumer(s, path_id("consumer_id", &id)?)?.response(&s.branch)))),
        Route::UpdateConsumer(id) => Box::new(move |b, s| {
            let id = path_id("consumer_id", &id)?;
            let f = ConsumerFields::parse(&input.body?, false)?;
            Ok(Reply::of(&b.update_consumer(s, id, f)?.response(&s.branch)))
        }),
        Route::DeleteConsumer(id) => Box::new(move |b, s| {
            b.delete_consumer(s, path_id("consumer_id", &id)?)?;
            Ok(Reply::Empty)
        }),
        other => unreachable!("not a consumer route: {other:?}"),
    }
}
