"""The Switch off view through the API, as a page's script would call it: its numbers for the user's own text, and
bad input refused with a plain message in the page's language that changes nothing (the text is as it was)."""
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from served import DEFAULTS, served

pytestmark = pytest.mark.server


def test_switch_off_through_the_api_and_its_refusals(lm):
    with served(lm) as (_, url, _demo):
        client = Client(url, verbose=False, download_files=False)
        client.predict("The capital of France is", "raw", "smollm2", **DEFAULTS, api_name="/start")
        client.predict(**{**DEFAULTS, "temperature": 0}, api_name="/next_token")
        said, _figure, texts, numbers = client.predict("mlp", 0, 0, "zero", 3, **DEFAULTS, api_name="/ablation")
        assert "KL" in said and numbers["kl_nats"] > 0.1 and numbers["part"] == {"kind": "mlp", "layer": 0, "head": None}
        assert len(numbers["on"]) == len(numbers["off"]) == 3 and "tbt-abl-off" in texts
        for leading, lang, words in [(("head", 30, 0, "mean", 3), "en", "Layer (from 0)"),
                                     (("head", 2, 9, "mean", 3), "zh", "注意力头"),
                                     (("mlp", 1, 0, "half", 3), "en", "half"),
                                     (("mlp", 1, 0, "mean", 0), "zh", "续写的词元数")]:
            with pytest.raises(AppError) as err:
                client.predict(*leading, **{**DEFAULTS, "lang": lang}, api_name="/ablation")
            assert words in str(err.value) and "Traceback" not in str(err.value), str(err.value)
        again = client.predict("mlp", 0, 0, "zero", 3, **DEFAULTS, api_name="/ablation")[3]
        assert again["on"] == numbers["on"] and again["kl_nats"] == pytest.approx(numbers["kl_nats"], abs=1e-9)
