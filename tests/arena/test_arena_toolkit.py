from typing import Literal

from toy_domain import TOY

from arena.core.toolkit import ToolContext, tool


def test_schema_from_signature_and_docstring():
    spec = TOY.tools["search_orders"].spec
    assert spec.description == "Search orders by customer name."
    props = spec.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "Text to look for in customer names."}
    assert props["limit"]["type"] == "integer" and props["limit"]["default"] == 5
    assert spec.parameters["required"] == ["query"]
    assert spec.parameters["additionalProperties"] is False
    assert spec.mode == "read" and spec.operation == "search" and spec.entity == "order"


def test_write_metadata_and_openai_form():
    spec = TOY.tools["refund_order"].spec
    assert (spec.mode, spec.permission, spec.irreversible) == ("write", "refund", True)
    fn = spec.openai_schema()["function"]
    assert fn["name"] == "refund_order" and fn["parameters"]["required"] == ["order_id", "amount"]


def test_literal_parameters_become_enums():
    @tool(mode="read")
    def pick(ctx: ToolContext, colour: Literal["red", "blue"]) -> str:
        """Pick a colour.

        Args:
            colour: The colour.
        """
        return colour

    assert pick.spec.parameters["properties"]["colour"]["enum"] == ["red", "blue"]
