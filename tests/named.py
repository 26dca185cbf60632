"""An API call's result by name, not by place: each output the call returns is named by its component's elem_id
(a browser state by its storage key), as the page's script and the browser tests find it.

    result = named(client, "/lesson_open", client.predict(..., api_name="/lesson_open"))
    result["tbt-lesson-step"]

The names come from the page's config as the client received it: the event's outputs in order, less the ones an
API call does not return (states, buttons, layouts). A handler may reorder its outputs; no test changes.
"""


def output_names(client, api_name: str) -> list[str]:
    """The name of each output an API call of `api_name` returns, in the order it returns them."""
    components = {c["id"]: c for c in client.config["components"]}
    (event,) = [d for d in client.config["dependencies"] if d.get("api_name") == api_name.lstrip("/")]
    returned = [components[i] for i in event["outputs"] if not components[i].get("skip_api")]
    names = [c["props"].get("elem_id") or c["props"].get("storage_key") for c in returned]
    assert None not in names and len(set(names)) == len(names), (api_name, names)  # every output has one name
    return names


def named(client, api_name: str, result) -> dict:
    """`result` of an API call of `api_name`, {output's name: value}."""
    names = output_names(client, api_name)
    values = result if isinstance(result, (list, tuple)) and len(names) != 1 else (result,)
    assert len(values) == len(names), (api_name, len(values), names)
    return dict(zip(names, values))
