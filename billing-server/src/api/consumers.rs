//! Consumers.

use super::{path_id, Input, Op, Reply};
use crate::router::Route;
use billing_core::consumer::{parse_consumer_list, ConsumerFields};
use serde_json::json;

pub fn build(route: Route, input: Input) -> Op {
    match route {
        Route::CreateConsumer => Box::new(move |b, s| {
            let f = ConsumerFields::parse(&input.body?, true)?;
            Ok(Reply::Json(b.create_consumer(s, f)?.to_json(&s.branch)))
        }),
        Route::ListConsumers => Box::new(move |b, s| {
            let (q, f) = parse_consumer_list(&input.query)?;
            let page = b.list_consumers(s, &q, &f)?;
            Ok(Reply::Json(
                json!({"data": page.items.iter().map(|c| c.to_json(&s.branch)).collect::<Vec<_>>(), "pagination": page.pagination()}),
            ))
        }),
        Route::GetConsumer(id) => Box::new(move |b, s| Ok(Reply::Json(b.get_consumer(s, path_id("consumer_id", &id)?)?.to_json(&s.branch)))),
        Route::UpdateConsumer(id) => Box::new(move |b, s| {
            let id = path_id("consumer_id", &id)?;
            let f = ConsumerFields::parse(&input.body?, false)?;
            Ok(Reply::Json(b.update_consumer(s, id, f)?.to_json(&s.branch)))
        }),
        Route::DeleteConsumer(id) => Box::new(move |b, s| {
            b.delete_consumer(s, path_id("consumer_id", &id)?)?;
            Ok(Reply::Empty)
        }),
        other => unreachable!("not a consumer route: {other:?}"),
    }
}
