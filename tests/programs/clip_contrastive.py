"""CLIP-style contrastive training in the style of openai/CLIP (clip/model.py) and
mlfoundations/open_clip (loss.py): a ViT image tower and a causal text Transformer built
from nn.MultiheadAttention with an OrderedDict MLP, QuickGELU, a fp32-casting LayerNorm
subclass, an attention mask from torch.empty().fill_(-inf).triu_(1), EOT pooling by
text.argmax(-1), normalized features, a learnable logit_scale clamped and exponentiated,
the symmetric cross entropy over the logits matrix with arange labels, then zero-shot
classification with softmax/topk and convert_weights to fp16."""
from collections import OrderedDict

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class LayerNorm(nn.LayerNorm):
    """Subclass torch's LayerNorm to handle fp16."""

    def forward(self, x: torch.Tensor):
        orig_type = x.dtype
        ret = super().forward(x.type(torch.float32))
        return ret.type(orig_type)


class QuickGELU(nn.Module):
    def forward(self, x: torch.Tensor):
        return x * torch.sigmoid(1.702 * x)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, d_model: int, n_head: int, attn_mask: torch.Tensor = None):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_head)
        self.ln_1 = LayerNorm(d_model)
        self.mlp = nn.Sequential(OrderedDict([
            ("c_fc", nn.Linear(d_model, d_model * 4)),
            ("gelu", QuickGELU()),
            ("c_proj", nn.Linear(d_model * 4, d_model))
        ]))
        self.ln_2 = LayerNorm(d_model)
        self.attn_mask = attn_mask

    def attention(self, x: torch.Tensor):
        self.attn_mask = self.attn_mask.to(dtype=x.dtype, device=x.device) if self.attn_mask is not None else None
        return self.attn(x, x, x, need_weights=False, attn_mask=self.attn_mask)[0]

    def forward(self, x: torch.Tensor):
        x = x + self.attention(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class Transformer(nn.Module):
    def __init__(self, width: int, layers: int, heads: int, attn_mask: torch.Tensor = None):
        super().__init__()
        self.width = width
        self.layers = layers
        self.resblocks = nn.Sequential(*[ResidualAttentionBlock(width, heads, attn_mask) for _ in range(layers)])

    def forward(self, x: torch.Tensor):
        return self.resblocks(x)


class VisionTransformer(nn.Module):
    def __init__(self, input_resolution: int, patch_size: int, width: int, layers: int, heads: int, output_dim: int):
        super().__init__()
        self.input_resolution = input_resolution
        self.output_dim = output_dim
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=width, kernel_size=patch_size, stride=patch_size, bias=False)
        scale = width ** -0.5
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(scale * torch.randn((input_resolution // patch_size) ** 2 + 1, width))
        self.ln_pre = LayerNorm(width)
        self.transformer = Transformer(width, layers, heads)
        self.ln_post = LayerNorm(width)
        self.proj = nn.Parameter(scale * torch.randn(width, output_dim))

    def forward(self, x: torch.Tensor):
        x = self.conv1(x)  # shape = [*, width, grid, grid]
        x = x.reshape(x.shape[0], x.shape[1], -1)  # shape = [*, width, grid ** 2]
        x = x.permute(0, 2, 1)  # shape = [*, grid ** 2, width]
        x = torch.cat([self.class_embedding.to(x.dtype) + torch.zeros(x.shape[0], 1, x.shape[-1], dtype=x.dtype, device=x.device), x], dim=1)  # shape = [*, grid ** 2 + 1, width]
        x = x + self.positional_embedding.to(x.dtype)
        x = self.ln_pre(x)
        x = x.permute(1, 0, 2)  # NLD -> LND
        x = self.transformer(x)
        x = x.permute(1, 0, 2)  # LND -> NLD
        x = self.ln_post(x[:, 0, :])
        if self.proj is not None:
            x = x @ self.proj
        return x


class CLIP(nn.Module):
    def __init__(self, embed_dim, image_resolution, vision_layers, vision_width, vision_patch_size,
                 context_length, vocab_size, transformer_width, transformer_heads, transformer_layers):
        super().__init__()
        self.context_length = context_length
        vision_heads = vision_width // 16
        self.visual = VisionTransformer(input_resolution=image_resolution, patch_size=vision_patch_size,
                                        width=vision_width, layers=vision_layers, heads=vision_heads,
                                        output_dim=embed_dim)
        self.transformer = Transformer(width=transformer_width, layers=transformer_layers,
                                       heads=transformer_heads, attn_mask=self.build_attention_mask())
        self.vocab_size = vocab_size
        self.token_embedding = nn.Embedding(vocab_size, transformer_width)
        self.positional_embedding = nn.Parameter(torch.empty(self.context_length, transformer_width))
        self.ln_final = LayerNorm(transformer_width)
        self.text_projection = nn.Parameter(torch.empty(transformer_width, embed_dim))
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))
        self.initialize_parameters()

    def initialize_parameters(self):
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.positional_embedding, std=0.01)
        proj_std = (self.transformer.width ** -0.5) * ((2 * self.transformer.layers) ** -0.5)
        attn_std = self.transformer.width ** -0.5
        fc_std = (2 * self.transformer.width) ** -0.5
        for block in self.transformer.resblocks:
            nn.init.normal_(block.attn.in_proj_weight, std=attn_std)
            nn.init.normal_(block.attn.out_proj.weight, std=proj_std)
            nn.init.normal_(block.mlp.c_fc.weight, std=fc_std)
            nn.init.normal_(block.mlp.c_proj.weight, std=proj_std)
        if self.text_projection is not None:
            nn.init.normal_(self.text_projection, std=self.transformer.width ** -0.5)

    def build_attention_mask(self):
        # lazily create causal attention mask, with full attention between the vision tokens
        # pytorch uses additive attention mask; fill with -inf
        mask = torch.empty(self.context_length, self.context_length)
        mask.fill_(float("-inf"))
        mask.triu_(1)  # zero out the lower diagonal
        return mask

    @property
    def dtype(self):
        return self.visual.conv1.weight.dtype

    def encode_image(self, image):
        return self.visual(image.type(self.dtype))

    def encode_text(self, text):
        x = self.token_embedding(text).type(self.dtype)  # [batch_size, n_ctx, d_model]
        x = x + self.positional_embedding.type(self.dtype)
        x = x.permute(1, 0, 2)  # NLD -> LND
        x = self.transformer(x)
        x = x.permute(1, 0, 2)  # LND -> NLD
        x = self.ln_final(x).type(self.dtype)
        # x.shape = [batch_size, n_ctx, transformer.width]
        # take features from the eot embedding (eot_token is the highest number in each sequence)
        x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection
        return x

    def forward(self, image, text):
        image_features = self.encode_image(image)
        text_features = self.encode_text(text)
        # normalized features
        image_features = image_features / image_features.norm(dim=1, keepdim=True)
        text_features = text_features / text_features.norm(dim=1, keepdim=True)
        # cosine similarity as logits
        logit_scale = self.logit_scale.exp()
        logits_per_image = logit_scale * image_features @ text_features.t()
        logits_per_text = logits_per_image.t()
        # shape = [global_batch_size, global_batch_size]
        return logits_per_image, logits_per_text


def convert_weights(model: nn.Module):
    """Convert applicable model parameters to fp16"""
    def _convert_weights_to_fp16(l):
        if isinstance(l, (nn.Conv1d, nn.Conv2d, nn.Linear)):
            l.weight.data = l.weight.data.half()
            if l.bias is not None:
                l.bias.data = l.bias.data.half()
        if isinstance(l, nn.MultiheadAttention):
            for attr in [*[f"{s}_proj_weight" for s in ["in", "q", "k", "v"]], "in_proj_bias", "bias_k", "bias_v"]:
                tensor = getattr(l, attr)
                if tensor is not None:
                    tensor.data = tensor.data.half()
        for name in ["text_projection", "proj"]:
            if hasattr(l, name):
                attr = getattr(l, name)
                if attr is not None:
                    attr.data = attr.data.half()
    model.apply(_convert_weights_to_fp16)


class ClipLoss(nn.Module):
    def get_ground_truth(self, device, num_logits) -> torch.Tensor:
        return torch.arange(num_logits, device=device, dtype=torch.long)

    def forward(self, image_features, text_features, logit_scale):
        logits_per_image = logit_scale * image_features @ text_features.T
        logits_per_text = logit_scale * text_features @ image_features.T
        labels = self.get_ground_truth(image_features.device, logits_per_image.shape[0])
        total_loss = (F.cross_entropy(logits_per_image, labels) +
                      F.cross_entropy(logits_per_text, labels)) / 2
        return total_loss


# synthetic paired data: 6 "concepts", each an image pattern and a caption of tokens
n_classes, ctx, vocab = 6, 8, 20
templates = torch.randn(n_classes, 3, 16, 16)
captions = torch.zeros(n_classes, ctx, dtype=torch.long)
for c in range(n_classes):
    length = 3 + c % 3
    captions[c, 0] = 1  # sot
    captions[c, 1:length] = torch.tensor([2 + (c + k) % 16 for k in range(length - 1)])
    captions[c, length] = vocab - 1  # eot: the largest id
print('captions', captions)
print('eot positions', captions.argmax(dim=-1))

model = CLIP(embed_dim=16, image_resolution=16, vision_layers=1, vision_width=32, vision_patch_size=4,
             context_length=ctx, vocab_size=vocab, transformer_width=32, transformer_heads=4,
             transformer_layers=1)
print(model.transformer.resblocks[0])
print('attn mask', model.transformer.resblocks[0].attn_mask[:3, :4])
print('logit scale %.4f' % model.logit_scale.item(), model.logit_scale.shape)
print("Model parameters:", f"{np.sum([int(np.prod(p.shape)) for p in model.parameters()]):,}")

loss_fn = ClipLoss()
exclude = lambda n, p: p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or 'logit_scale' in n
include = lambda n, p: not exclude(n, p)
named_parameters = list(model.named_parameters())
gain_or_bias_params = [p for n, p in named_parameters if exclude(n, p) and p.requires_grad]
rest_params = [p for n, p in named_parameters if include(n, p) and p.requires_grad]
optimizer = torch.optim.AdamW([{"params": gain_or_bias_params, "weight_decay": 0.},
                               {"params": rest_params, "weight_decay": 0.2}],
                              lr=2e-3, betas=(0.9, 0.98), eps=1e-6)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=2e-3, total_steps=40, pct_start=0.2)
for step in range(40):
    idx = torch.randperm(n_classes)[:4]
    images = templates[idx] + 0.3 * torch.randn(4, 3, 16, 16)
    image_features = F.normalize(model.encode_image(images), dim=-1)
    text_features = F.normalize(model.encode_text(captions[idx]), dim=-1)
    total_loss = loss_fn(image_features, text_features, model.logit_scale.exp())
    optimizer.zero_grad()
    total_loss.backward()
    optimizer.step()
    scheduler.step()
    # Note: we clamp to 4.6052 = ln(100), as in the original paper.
    with torch.no_grad():
        model.logit_scale.clamp_(0, np.log(100))
    if step % 8 == 0 or step == 39:
        print(f"step {step:2d} loss {total_loss.item():.4f} logit_scale {model.logit_scale.exp().item():.3f} "
              f"lr {scheduler.get_last_lr()[0]:.6f}")

model.eval()
with torch.no_grad():
    image = templates + 0.3 * torch.randn(n_classes, 3, 16, 16)
    logits_per_image, logits_per_text = model(image, captions)
    probs = logits_per_image.softmax(dim=-1)
    print('logits', logits_per_image.shape, 'text logits are the transpose:', torch.equal(logits_per_text, logits_per_image.T))
    values, indices = probs[0].topk(3)
    print('top-3', indices.shape, values.dtype, 'probabilities sum to 1:', torch.allclose(probs.sum(-1), torch.ones(n_classes)))
    print('zero-shot accuracy', (probs.argmax(-1) == torch.arange(n_classes)).float().mean().item())

convert_weights(model)
print('dtypes', model.dtype, model.visual.proj.dtype, model.transformer.resblocks[0].attn.in_proj_weight.dtype,
      model.ln_final.weight.dtype, model.logit_scale.dtype)
with torch.no_grad():
    feats = model.encode_image(image[:2])
    print('fp16 image features', feats.shape, feats.dtype, bool(torch.isfinite(feats).all()))
    text = model.encode_text(captions[:2])
    print('fp16 text features', text.shape, text.dtype)
