//! The JSON document JMESPath expressions run against: request, element, variables. It
//! must not evaluate expressions itself (that is `vars`).

use serde_json::{Map, Value, json};

use super::Request;

#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) doc: Value,
}

impl Context {
    pub fn from_request(req: &Request) -> Self {
        let mut doc = match &req.values {
            Value::Object(m) => Value::Object(m.clone()),
            _ => Value::Object(Map::new()),
        };
        doc["request"] = json!({
            "operation": req.operation,
            "object": req.object,
            "oldObject": req.old_object,
            "userInfo": {"username": req.user_info.username, "groups": req.user_info.groups},
            "roles": req.user_info.roles,
            "clusterRoles": req.user_info.cluster_roles,
        });
        Context { doc }
    }

    pub fn with_element(&self, element: &Value, index: usize) -> Self {
        let mut doc = self.doc.clone();
        doc["element"] = element.clone();
        doc["elementIndex"] = json!(index);
        Context { doc }
    }

    pub fn add_variable(&mut self, name: &str, value: Value) {
        if let Value::Object(m) = &mut self.doc {
            m.insert(name.to_string(), value);
        }
    }

    pub fn document(&self) -> &Value {
        &self.doc
    }
}
