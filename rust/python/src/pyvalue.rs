//! Python values to JSON values and back, with the reference's errors for what JSON cannot
//! hold (cycles, depth, NaN, huge ints, other types by their type name, non-str keys).

use pyo3::exceptions::{PyOverflowError, PyRecursionError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// The most containers a Python value tree may nest (the body dict itself counts).
const MAX_DEPTH: usize = 128;

/// Convert a Python value tree (dicts, lists, tuples, str, int, float, bool, None) to JSON.
pub fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let mut open = Vec::new();
    convert(obj, &mut open)
}

fn convert(obj: &Bound<'_, PyAny>, open: &mut Vec<usize>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::Number(u.into()));
        }
        return Err(PyOverflowError::new_err(
            "integer is outside the JSON number range",
        ));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        return Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err(format!("{v} is not a finite JSON number")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    let is_dict = obj.is_instance_of::<PyDict>();
    let is_seq = obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>();
    if !is_dict && !is_seq {
        return Err(PyTypeError::new_err(format!(
            "{} is not a JSON value",
            obj.get_type().name()?
        )));
    }
    let id = obj.as_ptr() as usize;
    if open.contains(&id) {
        return Err(PyValueError::new_err("circular reference in JSON input"));
    }
    if open.len() >= MAX_DEPTH {
        return Err(PyRecursionError::new_err(format!(
            "JSON input exceeds the maximum nesting depth of {MAX_DEPTH}"
        )));
    }
    open.push(id);
    let value = if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            let key = k
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("JSON object keys must be str"))?
                .to_str()?
                .to_owned();
            map.insert(key, convert(&v, open)?);
        }
        Value::Object(map)
    } else {
        let mut items = Vec::new();
        for item in obj.try_iter()? {
            items.push(convert(&item?, open)?);
        }
        Value::Array(items)
    };
    open.pop();
    Ok(value)
}

/// Convert a JSON value to plain Python data (dicts keep key order).
pub fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_python(py, v)?)?;
            }
            dict.into_any()
        }
    })
}
