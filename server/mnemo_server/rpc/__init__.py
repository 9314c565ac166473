"""What every gRPC call shares below the servicers: the one error-mapping module (``errors``)
and the helpers that wrap handlers in interceptors (``handlers``)."""
