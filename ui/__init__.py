"""The page: Gradio components, one module per view, thin handlers over model/ and viz/ (see app.py)."""
