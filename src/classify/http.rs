//! HTTP-mode classification: status classes, transport errors and method safety.
